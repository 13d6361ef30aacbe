import Foundation
import Testing

@testable import IngestCore
@testable import IngestTestSupport

/// Callbacks delivered exactly once: the fixture backend refuses a repeated callback for one upload with 409
/// ("already submitted"), and `on_conflict: done` makes that answer end the file as done — whether the repeat came
/// from a retry after a lost answer (these tests) or from a run resumed after a kill (`JournalCallbackCrashTests`).
@Suite(.serialized) struct RequestStageConflictTests {
    let ingest = TestPaths.ingest

    /// Runs `ingest run` (not quiet: the table is in stdout) with a JSON Lines report; returns the result and the
    /// report's one object.
    func runOne(_ pipeline: String, in folder: TemporaryFolder) throws -> (CommandResult, [String: Any]) {
        let file = try folder.file("p.yml", pipeline)
        let report = folder.path + "/report.jsonl"
        let result = try runCommand(
            ingest, ["run", file, "in", "--report", report], environment: environmentWithoutProxies(),
            directory: folder.path)
        return (result, reportObjects(report).first ?? [:])
    }

    /// The server analyses the video, then the connection is reset before its answer: the client retries (a
    /// dropped connection is retried), the server refuses the repeat with 409, and the file is done — with the
    /// 409's answer kept under `as:`, `report:` fields it lacks as null, and a note saying it was already done.
    @Test func aCallbackWhoseAnswerWasLostIsRetriedAndItsConflictCountsAsDone() throws {
        let backend = try FixtureBackend(
            faults: #"[{"method": "POST", "path": "/api/analyze-video", "action": "act_then_reset", "times": 1}]"#)
        defer { backend.stop() }
        let folder = try TemporaryFolder("callback-reset")
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/alice/clip.mov", size: 200_000)
        let pipeline = UploadPipelineTests.hockeyPipeline(backend.base).replacingOccurrences(
            of: "      as: analysis", with: "      report: [analysis.shots_detected]\n      as: analysis")
        let (result, report) = try runOne(pipeline, in: folder)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(report["status"] as? String == "passed", "\(report)")
        // The server acted once, and refused the retry.
        #expect(try backend.counts("callbacks") == ["/api/analyze-video": 1])
        #expect(try backend.counts("callback_repeats") == ["/api/analyze-video": 1])
        let statuses = try backend.requests().filter { $0[1] as? String == "/api/analyze-video" }.map { "\($0[2])" }
        #expect(statuses == ["reset after 200", "409"])

        let facts = try #require(report["facts"] as? [String: Any])
        let storagePath = try #require((facts["ticket"] as? [String: Any])?["storage_path"] as? String)
        let detail = "Video \(storagePath) was already submitted for analysis"
        #expect(facts["notes"] as? [String] == ["already done: the server answered 409 Conflict: \(detail)"])
        #expect((facts["analysis"] as? [String: Any])?["detail"] as? String == detail)
        let fields = try #require(facts["report"] as? [String: Any])
        #expect(fields["shots_detected"] is NSNull, "\(fields)")
        #expect(result.stdout.contains("ok    in/alice/clip.mov"), "\(result.stdout)")
        #expect(result.stdout.contains("(already done: the server answered 409 Conflict: \(detail))"))
    }

    /// A 409 on the first call: `on_conflict: fail` fails the file naming the server's detail; `done` fails it too
    /// (`request.conflict`, issue #29 §5): no earlier call of this file can have made what the 409 refers to.
    @Test(arguments: ["fail", "done"])
    func aFirstCallConflict(policy: String) throws {
        let backend = try FixtureBackend(
            faults: #"""
                [{"method": "POST", "path": "/api/analyze-video", "action": "status", "status": 409,
                  "body": {"detail": "Video already submitted for analysis by another client"}}]
                """#)
        defer { backend.stop() }
        let folder = try TemporaryFolder("callback-409-\(policy)")
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/bob/clip.mov", size: 100_000)
        let pipeline = UploadPipelineTests.hockeyPipeline(backend.base).replacingOccurrences(
            of: "on_conflict: done", with: "on_conflict: \(policy)")
        let (result, report) = try runOne(pipeline, in: folder)
        #expect(try backend.counts("callbacks").isEmpty)
        if policy == "fail" {
            #expect(result.status == 1)
            #expect(report["status"] as? String == "failed")
            let failure = try #require((report["failures"] as? [[String: Any]])?.first)
            #expect(failure["rule"] as? String == "status")
            #expect(failure["stage"] as? String == "request")
            let message = failure["message"] as? String ?? ""
            #expect(
                message.hasSuffix(
                    "/api/analyze-video answered 409 Conflict: Video already submitted for analysis by another client"),
                "\(message)")
        } else {
            #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
            #expect(report["status"] as? String == "failed")
            let failure = try #require((report["failures"] as? [[String: Any]])?.first)
            #expect(failure["rule"] as? String == "conflict")
            let message = failure["message"] as? String ?? ""
            #expect(
                message.contains(
                    "/api/analyze-video: the server answered 409 Conflict: Video already submitted for analysis by "
                        + "another client to this file's first call"),
                "\(message)")
        }
    }
}
