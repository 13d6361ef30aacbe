// The example of docs/library.md, compiled here; LibraryExampleTests checks the document shows this text exactly.
// BEGIN EXAMPLE
import Foundation
import Ingest

/// Runs the pipeline in `pipelineFile` over `paths`, printing one line per file, and returns the counts.
func ingest(pipelineFile: String, paths: [String]) throws -> RunSummary {
    let pipeline = try Pipeline.load(path: pipelineFile)
    let runner = Runner(pipeline: pipeline, settings: RunSettings(workDirectory: NSTemporaryDirectory() + "work"))
    return try runner.run(paths: paths) { report in
        let reasons = report.failures.map { "\($0.rule): \($0.message)" }
        print(report.status.rawValue, report.relativePath, reasons.joined(separator: "; "))
    }
}

/// The same run as an async sequence, stopping at the first file that failed: leaving the loop cancels the run (no
/// new file starts), as cancelling the task that awaits this does.
func firstFailure(pipelineFile: String, paths: [String]) async throws -> ItemReport? {
    let pipeline = try Pipeline.load(path: pipelineFile)
    let runner = Runner(pipeline: pipeline, settings: RunSettings(workDirectory: NSTemporaryDirectory() + "work"))
    for try await report in runner.reports(for: paths) where report.status == .failed {
        return report
    }
    return nil
}

/// What FFmpeg and the sniffer say about one file: its kind, duration and streams, as JSON.
func describe(file: String) throws -> String {
    JSONValue.object(try Prober.probe(path: file, timeout: 10).json).serialized()
}

/// A GET URL for `s3://bucket/key`, valid for an hour.
func downloadURL(for object: String, credentials: AWSCredentials) throws -> String {
    let presigner = S3Presigner(
        credentials: credentials, region: "us-east-1", endpoint: try S3Endpoint(region: "us-east-1"))
    return try presigner.presignedURL(method: "GET", location: try S3Location(parsing: object), expires: 3600)
}
// END EXAMPLE
