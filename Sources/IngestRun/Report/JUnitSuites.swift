import Foundation
import IngestCore
import IngestNative

/// One `<testsuite>` of a JUnit report: its test cases spooled to a temp file (mode 0600, removed on deinit) until
/// its counts, which XML puts first, are known. A report from a journal that two pipelines shared has one per
/// pipeline, so CI shows each pipeline's files under its own name.
final class JUnitSuiteSpool {
    let name: String
    private(set) var summary = RunSummary()
    private let spool: FileHandle
    private let spoolPath: String

    init(name: String) throws {
        self.name = name
        spoolPath = NSTemporaryDirectory() + "/ingest-junit-\(getpid())-\(UUID().uuidString).xml"
        guard FileManager.default.createFile(atPath: spoolPath, contents: nil, attributes: [.posixPermissions: 0o600]),
            let spool = FileHandle(forUpdatingAtPath: spoolPath)
        else { throw ReportError("cannot create a temp file for the JUnit report at \(spoolPath)") }
        self.spool = spool
    }

    deinit {
        try? spool.close()
        try? FileSystem.remove(spoolPath)
    }

    /// Adds one `<testcase>` element.
    func append(_ xml: String, status: ItemStatus) throws {
        do {
            try spool.write(contentsOf: Data(xml.utf8))
        } catch {
            throw ReportError("cannot write the JUnit spool file \(spoolPath): \(error.localizedDescription)")
        }
        summary.add(status)
    }

    /// The `<testsuite>` element with its counts and every test case.
    func write(to output: ReportOutput) throws {
        try output.write(
            "  <testsuite name=\"\(xmlEscape(name))\" tests=\"\(summary.total)\" failures=\"\(summary.failed)\" "
                + "errors=\"0\" skipped=\"\(summary.skipped)\">\n")
        try spool.seek(toOffset: 0)
        while let chunk = try spool.read(upToCount: 256 * 1024), !chunk.isEmpty {
            try output.write(chunk)
        }
        try output.write("  </testsuite>\n")
    }
}
