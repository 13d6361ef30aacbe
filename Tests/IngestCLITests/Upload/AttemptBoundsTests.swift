import Foundation
import Testing

@testable import IngestCheck
@testable import IngestCore
@testable import IngestTestSupport

/// Every attempt ends (issue 19, §4): a bound on each phase — the body going out, the wait for the answer, the
/// answer coming in — a trickle included, and answers kept in memory capped with a message naming the cap. Against
/// the fixture backend's `stream` and `never_answer` faults (Tests/Fixtures/slow_answers.py), with timeouts of 1–2 s.
@Suite(.serialized) struct AttemptBoundsTests {
    /// Runs `ingest run` on `pipeline` over `inputs` with a JSON report, killing it if it has not ended after `limit`
    /// seconds — the bug these tests are about is a run that never ends, which must fail the test, not hang it.
    /// Returns the exit status (nil when it had to be killed) and the report's objects.
    func runBounded(_ pipeline: String, in folder: TemporaryFolder, limit: Double = 90) throws -> (
        status: Int32?, reports: [[String: Any]]
    ) {
        let file = try folder.file("pipeline.yml", pipeline)
        let report = folder.path + "/report.jsonl"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestPaths.ingest)
        process.arguments = ["run", file, folder.path + "/in", "--report", report, "-q", "--no-journal"]
        process.environment = environmentWithoutProxies()
        process.currentDirectoryURL = URL(fileURLWithPath: folder.path)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(limit)
        while process.isRunning && Date() < deadline { usleep(50_000) }
        guard !process.isRunning else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return (nil, reportObjects(report))
        }
        return (process.terminationStatus, reportObjects(report))
    }

    /// The one failure of a run over one file that must fail.
    func onlyFailure(_ run: (status: Int32?, reports: [[String: Any]])) throws -> [String: Any] {
        #expect(run.status == 1, "the run ended with \(run.status.map(String.init) ?? "nothing: it was killed")")
        let report = try #require(run.reports.first)
        return try #require((report["failures"] as? [[String: Any]])?.first)
    }

    /// The issue's case: a PUT answered 200 with `Content-Length: 1000000000` whose body then drips 4 bytes a second.
    /// Never quite stalled, it went on for ever; below `min_speed` (1 KiB/s by default) for `stall_timeout` it ends,
    /// saying it was receiving the answer.
    @Test func anAnswerDrippingAFewBytesASecondEnds() throws {
        let backend = try FixtureBackend(
            faults: #"""
                [{"method": "PUT", "path": "/signed/", "action": "stream", "parts": [["x", 1000000000]],
                  "bytes_per_second": 4}]
                """#)
        let folder = try TemporaryFolder("drip")
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/u/a.mov", size: 1000)
        let pipeline = UploadPipelineTests.hockeyPipeline(backend.base, extra: ", stall_timeout: 2s, max_attempts: 1")
        let failure = try onlyFailure(try runBounded(pipeline, in: folder))
        #expect(failure["stage"] as? String == "upload", "\(failure)")
        #expect(failure["rule"] as? String == "network", "\(failure)")
        let message = failure["message"] as? String ?? ""
        #expect(message.contains("too slow"), "\(message)")
        #expect(message.contains("receiving the answer: status 200"), "\(message)")
        #expect(message.contains("of 1,000,000,000 bytes in"), "\(message)")
    }

    /// A server that takes the whole body and never answers: `upload`'s `timeout` ends the attempt, and the
    /// message says it was waiting for the answer with the body sent.
    @Test func aServerThatNeverAnswersIsBoundByTheUploadTimeout() throws {
        let backend = try FixtureBackend(
            faults: #"[{"method": "PUT", "path": "/signed/", "action": "never_answer", "seconds": 60}]"#)
        let folder = try TemporaryFolder("never")
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/u/a.mov", size: 1000)
        let pipeline = UploadPipelineTests.hockeyPipeline(backend.base, extra: ", timeout: 2s, max_attempts: 1")
        let failure = try onlyFailure(try runBounded(pipeline, in: folder))
        #expect(failure["rule"] as? String == "network", "\(failure)")
        let message = failure["message"] as? String ?? ""
        #expect(message.contains("timed out"), "\(message)")
        #expect(message.contains("waiting for the answer after all 1,000 bytes were sent"), "\(message)")
    }

    /// A "ticket" of 200 MB is cut at the 1 MiB kept in memory (not read to its end), and the failure names that
    /// cap instead of calling the answer "not JSON".
    @Test func aHugeTicketAnswerNamesTheCap() throws {
        let failure = try ticketFailure(
            #"[["{\"pad\": \"", 1], ["x", 200000000], ["\"}", 1]]"#, name: "huge")
        let message = failure["message"] as? String ?? ""
        #expect(message.contains("the answer is larger than 1 MiB"), "\(message)")
        #expect(!message.contains("not JSON"), "\(message)")
    }

    /// JSON nested 100,000 deep is refused by the parser's depth limit, and the failure says so.
    @Test func aDeeplyNestedTicketAnswerNamesTheDepthLimit() throws {
        let failure = try ticketFailure(#"[["[", 100000], ["]", 100000]]"#, name: "deep")
        let message = failure["message"] as? String ?? ""
        #expect(message.contains("JSON nested deeper than 200 levels"), "\(message)")
        #expect(!message.contains("not JSON"), "\(message)")
    }

    /// The failure of seed 001's ticket request answered with the fixture's `stream` of `parts`.
    func ticketFailure(_ parts: String, name: String) throws -> [String: Any] {
        let backend = try FixtureBackend(
            faults: #"[{"method": "POST", "path": "/api/upload-url", "action": "stream", "parts": \#(parts)}]"#)
        let folder = try TemporaryFolder(name)
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/u/a.mov", size: 1000)
        let pipeline = UploadPipelineTests.hockeyPipeline(backend.base)
        let failure = try onlyFailure(try runBounded(pipeline, in: folder))
        #expect(failure["stage"] as? String == "request", "\(failure)")
        #expect(failure["rule"] as? String == "response", "\(failure)")
        return failure
    }
}
