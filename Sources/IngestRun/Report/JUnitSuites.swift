import Foundation
import IngestCore
import NativeSystem

/// One `<testsuite>` of a JUnit report: its test cases spooled to a temp file (mode 0600, removed on deinit) until
/// its counts, which XML puts first, are known. A report from a journal that two pipelines shared has one per
/// pipeline, so CI shows each pipeline's files under its own name.
final class JUnitSuiteSpool {
    let name: String
    private(set) var summary = RunSummary()
    private let spool: SpoolFile

    init(name: String) throws {
        self.name = name
        let spoolPath = NSTemporaryDirectory() + "/ingest-junit-\(CurrentProcess.id)-\(UUID().uuidString).xml"
        do {
            spool = try SpoolFile(path: spoolPath)
        } catch {
            throw ReportError("cannot create a temp file for the JUnit report at \(spoolPath): \(error.reason)")
        }
    }

    /// Adds one `<testcase>` element.
    func append(_ xml: String, status: ItemStatus) throws {
        do {
            try spool.append(Array(xml.utf8))
        } catch {
            throw ReportError("cannot write the JUnit spool file \(spool.path): \(error.reason)")
        }
        summary.add(status)
    }

    /// The `<testsuite>` element with its counts and every test case.
    func write(to output: ReportOutput) throws {
        try output.write(
            "  <testsuite name=\"\(xmlEscape(name))\" tests=\"\(summary.total)\" failures=\"\(summary.failed)\" "
                + "errors=\"0\" skipped=\"\(summary.skipped)\">\n")
        try spool.forEachChunk { try output.write(Data($0)) }
        try output.write("  </testsuite>\n")
    }
}
