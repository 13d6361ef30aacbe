import Foundation
import Testing

@testable import Ingest

/// Issue 22 §1, the cases of a resumed multipart upload that are not the plain one: a part S3 holds that is not the
/// local part is sent again, and a changed part size or a changed pipeline starts over, aborting the old upload.
/// Same setting as `S3MultipartResumeTests` (kill -9 after four parts, SeaweedFS behind the counting proxy).
extension S3MultipartResumeTests {
    /// `ingest run -v` (its log on stderr) with the report's objects.
    func runVerbose(_ setup: Setup) throws -> (CommandResult, [[String: Any]]) {
        let report = setup.folder.path + "/report-\(UUID().uuidString.prefix(6)).jsonl"
        let result = try runCommand(
            TestPaths.ingest, ["run", setup.pipeline, "in", "--report", report, "-q", "-v"], environment: environment,
            directory: setup.folder.path)
        return (result, reportObjects(report))
    }

    /// S3 lists part 2 with an ETag that is not the local part's MD5, as a store holding other bytes for that part
    /// would (the proxy replaces the second `<ETag>` of the ListParts answer: uploading other bytes as part 2 left
    /// it to SeaweedFS which of the two same-numbered parts it listed and completed, so the case came and went).
    /// The resumed run sends part 2 again with the parts S3 lacks.
    @Test func aStoredPartThatDiffersFromTheLocalPartIsSentAgain() throws {
        try withRunKilledAfterFourParts("differs") { setup, upload in
            try resumeWithPartTwoListedAsAnother(setup, upload: upload)
        }
    }

    private func resumeWithPartTwoListedAsAnother(_ setup: Setup, upload: String) throws {
        let stored = try storedParts(setup.key, upload)
        try setup.proxy.setFaults(
            """
            [{"method": "GET", "path": "/\(bucket)/\(setup.key)", "action": "tamper", "element": "ETag",
              "occurrence": 2, "value": "&quot;0123456789abcdef0123456789abcdef&quot;", "times": 1}]
            """)
        let start = try setup.proxy.requests().count
        let (second, reports) = try runVerbose(setup)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(reports.first?["status"] as? String == "passed", "\(reports)")
        #expect(second.stderr.contains("part 2 differs from the part S3 holds: sending it again"), "\(second.stderr)")
        let sent = try methods(setup, since: start)
        #expect(sent.filter { $0 == "PUT" }.count == Self.parts - stored + 1, "\(sent)")
        try expectStoredCopy(setup, of: setup.input)
        #expect(try openUploads(setup.key).isEmpty)
    }

    /// The pipeline's `part_size` (5 MiB → 6 MiB), or something else in the pipeline, changed between the runs:
    /// the old upload is aborted, never resumed, and the file is sent whole in a new one.
    @Test(arguments: ["part_size: 6MiB", "backoff: 60ms"]) func aChangedPartSizeOrPipelineAbortsTheOldUpload(
        change: String
    ) throws {
        try withRunKilledAfterFourParts("stale") { setup, upload in try resume(setup, upload: upload, after: change) }
    }

    private func resume(_ setup: Setup, upload: String, after change: String) throws {
        let text = try String(contentsOfFile: setup.pipeline, encoding: .utf8)
        let option = String(change.prefix { $0 != ":" })
        let line = try #require(text.split(separator: "\n").first { $0.contains("\(option):") })
        try text.replacingOccurrences(of: String(line), with: "      " + change)
            .write(toFile: setup.pipeline, atomically: true, encoding: .utf8)
        let start = try setup.proxy.requests().count
        let (second, reports) = try runVerbose(setup)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(reports.first?["status"] as? String == "passed", "\(reports)")
        let reason = option == "part_size" ? "the part size changed (5242880 → 6291456 bytes)" : "the pipeline changed"
        #expect(
            second.stderr.contains("multipart upload \(upload) not resumed: \(reason) (multipart upload aborted)"),
            "\(second.stderr)")
        let sent = try methods(setup, since: start)
        #expect(sent.filter { $0 == "DELETE" }.count == 1, "the old upload was not aborted: \(sent)")
        let parts = option == "part_size" ? (Self.size + (6 << 20) - 1) / (6 << 20) : Self.parts
        #expect(sent.filter { $0 == "PUT" }.count == parts, "\(sent)")
        try expectStoredCopy(setup, of: setup.input)
        #expect(try openUploads(setup.key).isEmpty)
        #expect(journaledParts(setup) == 0)
    }
}
