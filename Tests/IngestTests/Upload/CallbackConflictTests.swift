import Foundation
import Testing

@testable import Ingest

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

    /// A 409 on the first call: `on_conflict: fail` fails the file naming the server's detail; `done` counts it as
    /// done all the same (documented: the client cannot tell its own earlier call from another's).
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
            #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
            #expect(report["status"] as? String == "passed")
            #expect(
                (report["facts"] as? [String: Any])?["notes"] as? [String] == [
                    "already done: the server answered 409 Conflict: Video already submitted for analysis by another "
                        + "client"
                ])
        }
    }
}

/// `kill -9` while the server holds the answer to a callback it already acted on, then a resumed run: the callback
/// was journaled as started, never as done, so it is sent again; the server refuses it with 409 and the file ends
/// done, the callback delivered once.
@Suite(.serialized) struct JournalCallbackCrashTests {
    @Test func killedWhileACallbackAnswerIsHeldThenResumed() throws {
        let backend = try FixtureBackend(
            faults: #"""
                [{"method": "POST", "path": "/api/analyze-video", "action": "act_then_hang", "seconds": 30}]
                """#)
        defer { backend.stop() }
        let folder = try TemporaryFolder("callback-kill")
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/carol/clip.mov", size: 300_000, seed: 3)
        let pipeline = try folder.file("p.yml", UploadPipelineTests.hockeyPipeline(backend.base))
        try killIngest(["run", pipeline, "in", "-q"], in: folder.path, at: "the callback") {
            (try? backend.counts("callbacks"))?["/api/analyze-video"] == 1
        }

        try backend.setFaults("[]")
        let second = try runCommand(
            TestPaths.ingest, ["run", pipeline, "in", "--report", "second.jsonl"],
            environment: environmentWithoutProxies(), directory: folder.path)
        #expect(second.status == 0, "second run: \(second.stdout)\(second.stderr)")
        #expect(try backend.objects().count == 1)
        #expect(try backend.counts("tickets") == ["/api/upload-url": 1])
        #expect(try backend.counts("callbacks") == ["/api/analyze-video": 1])
        #expect(try backend.counts("callback_repeats") == ["/api/analyze-video": 1])
        #expect(
            second.stdout.contains("(already done: the server answered 409 Conflict: Video users/carol/"),
            "\(second.stdout)")
        let line = try String(contentsOfFile: folder.path + "/second.jsonl", encoding: .utf8)
        #expect(line.contains(#""status":"passed""#), "\(line)")
        #expect(line.contains("already done: the server answered 409 Conflict"), "\(line)")
        let journal = try Journal(path: folder.path + "/.ingest/journal.sqlite", writer: false, create: false)
        defer { try? journal.close() }
        #expect(try journal.counts() == [.done: 1])

        // The note is journaled with the file: a report rebuilt from the journal still says so.
        let rebuilt = try runCommand(
            TestPaths.ingest, ["report", "--format", "table"], environment: environmentWithoutProxies(),
            directory: folder.path)
        #expect(rebuilt.stdout.contains("already done: the server answered 409 Conflict"), "\(rebuilt.stdout)")
    }
}

/// The committed seed pipelines, killed while the backend holds the answer to their callback, then resumed: each
/// callback is delivered once (its stage has `on_conflict: done`); and the case they do not cover, a ticket.
@Suite(.serialized) struct SeedPipelinesCallbackCrashTests {
    struct Seed: CustomStringConvertible, Sendable {
        var pipeline: String
        var sample: String
        var input: String
        var callback: String
        var counted: String
        var description: String { pipeline }
    }

    static let seeds = [
        Seed(
            pipeline: "hockey-video-analyze", sample: "good/plain.mov", input: "in/uid-5/shift.mov",
            callback: "/api/analyze-video", counted: "/api/analyze-video"),
        Seed(
            pipeline: "vehicle-photos", sample: "good/photo.jpg", input: "in/van.jpg", callback: "/analyze",
            counted: "/analyze"),
        Seed(
            pipeline: "vet-audio", sample: "good/voice.m4a", input: "in/\(UUID().uuidString.lowercased())/visit.m4a",
            callback: "/api/v1/visit-transcripts/audio/upload/complete/",
            counted: "/api/v1/visit-transcripts/audio/upload/complete"),
    ]

    static func environment(_ backend: FixtureBackend) -> [String: String] {
        [
            "PUCKBUDDY_API": backend.base, "PUCKBUDDY_USER_ID": "uid-5", "DISCERNER_API": backend.base,
            "HELPPET_API": backend.base, "HELPPET_TOKEN": "vet-jwt",
        ]
    }

    /// Starts the seed's pipeline on its one file with `faults`, kills it once `ready` holds (polling the backend,
    /// bounded), and runs it again without faults; returns the second run.
    static func killThenResume(
        _ seed: Seed, faults: String, in folder: TemporaryFolder, backend: FixtureBackend,
        ready: (FixtureBackend) -> Bool
    ) throws -> CommandResult {
        let path = folder.path + "/" + seed.input
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: TestPaths.root + "/Samples/" + seed.sample, toPath: path)
        let pipeline = TestPaths.root + "/pipelines/\(seed.pipeline).yml"
        try backend.setFaults(faults)
        try killIngest(
            ["run", pipeline, "in", "-q"], in: folder.path, environment: environment(backend), polls: 600,
            at: "the point to kill it at"
        ) { ready(backend) }
        try backend.setFaults("[]")
        return try runCommand(
            TestPaths.ingest, ["run", pipeline, "in"], environment: environmentWithoutProxies(environment(backend)),
            directory: folder.path)
    }

    @Test(arguments: seeds)
    func killedWhileTheCallbackAnswerIsHeld(seed: Seed) throws {
        let backend = try FixtureBackend(bearer: "vet-jwt")
        defer { backend.stop() }
        let folder = try TemporaryFolder("seed-callback-kill")
        defer { folder.remove() }
        let faults = #"[{"method": "POST", "path": "\#(seed.callback)", "action": "act_then_hang", "seconds": 30}]"#
        let second = try Self.killThenResume(seed, faults: faults, in: folder, backend: backend) {
            (try? $0.counts("callbacks"))?[seed.counted] == 1
        }
        #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
        #expect(second.stdout.contains("ok    \(seed.input)"), "\(second.stdout)")
        #expect(try backend.objects().count == 1)
        #expect(try backend.counts("callbacks") == [seed.counted: 1])
        if seed.pipeline == "vet-audio" {
            // Its complete has `verify:`: the playback answers, so the complete is not sent again at all.
            #expect(second.stdout.contains("(already done: verified by GET "), "\(second.stdout)")
            #expect(try backend.counts("callback_repeats").isEmpty)
        } else {
            #expect(second.stdout.contains("(already done: the server answered 409 Conflict: "), "\(second.stdout)")
            #expect(try backend.counts("callback_repeats") == [seed.counted: 1])
        }
    }

    /// Seed 003's initiate acts (a visit, a live ticket) and its answer is lost to a reset: the retry's 409 may be
    /// the server refusing that very call's repeat, so the file fails rather than being skipped as a duplicate.
    @Test func vetAudioTicketWhoseAnswerWasLostFailsRatherThanSkips() throws {
        let backend = try FixtureBackend(bearer: "vet-jwt")
        defer { backend.stop() }
        let folder = try TemporaryFolder("seed003-ticket-reset")
        defer { folder.remove() }
        let seed = Self.seeds[2]
        let initiate = "/api/v1/visit-transcripts/audio/upload/initiate"
        try backend.setFaults(#"[{"method": "POST", "path": "\#(initiate)", "action": "act_then_reset", "times": 1}]"#)
        let path = folder.path + "/" + seed.input
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: TestPaths.root + "/Samples/" + seed.sample, toPath: path)
        let result = try runCommand(
            TestPaths.ingest, ["run", TestPaths.root + "/pipelines/\(seed.pipeline).yml", "in"],
            environment: environmentWithoutProxies(Self.environment(backend)), directory: folder.path)
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        #expect(
            result.stdout.contains("409 Conflict after 2 attempts: Audio recording already exists"), "\(result.stdout)")
        #expect(result.stdout.contains("so the file is failed rather than skipped"), "\(result.stdout)")
        #expect(try backend.counts("tickets") == [initiate: 2])
        #expect(try backend.objects().isEmpty)
    }

    /// Seed 003's ticket (initiate) answered just before a kill is asked for again, and the backend's
    /// one-recording-per-pet-per-day rule refuses it (409) while the first ticket lives. That 409 answers a call
    /// the journal shows as cut short, so the file fails (it is not skipped as a duplicate, which would leave it
    /// journaled as handled with nothing uploaded); once the first ticket expired, a later run uploads it.
    @Test func vetAudioTicketAnsweredBeforeAKillFailsUntilItExpiresThenUploads() throws {
        let ttl = 10.0
        let backend = try FixtureBackend(bearer: "vet-jwt", urlTTL: Int(ttl))
        defer { backend.stop() }
        let folder = try TemporaryFolder("seed003-ticket-kill")
        defer { folder.remove() }
        let seed = Self.seeds[2]
        let initiate = "/api/v1/visit-transcripts/audio/upload/initiate"
        let faults = #"[{"method": "POST", "path": "\#(initiate)", "action": "act_then_hang", "seconds": 30}]"#
        let issued = Date()
        let second = try Self.killThenResume(seed, faults: faults, in: folder, backend: backend) {
            (try? $0.counts("tickets"))?[initiate] == 1
        }
        try #require(Date().timeIntervalSince(issued) < ttl, "the first ticket expired before the resumed run")
        #expect(second.status == 1, "\(second.stdout)\(second.stderr)")
        #expect(
            second.stdout.contains("409 Conflict: Audio recording already exists for pet "), "\(second.stdout)")
        #expect(second.stdout.contains("so the file is failed rather than skipped"), "\(second.stdout)")
        #expect(try backend.objects().isEmpty)
        // Once the ticket the killed run was given has expired, the backend renews it for the same visit.
        Thread.sleep(forTimeInterval: max(0, ttl + 1 - Date().timeIntervalSince(issued)))
        let third = try runCommand(
            TestPaths.ingest, ["run", TestPaths.root + "/pipelines/\(seed.pipeline).yml", "in"],
            environment: environmentWithoutProxies(Self.environment(backend)), directory: folder.path)
        #expect(third.status == 0, "\(third.stdout)\(third.stderr)")
        #expect(third.stdout.contains("ok    \(seed.input)"), "\(third.stdout)")
        #expect(try backend.counts("tickets") == [initiate: 3])
        #expect(try backend.objects().count == 1)
        #expect(try backend.counts("callbacks") == [seed.counted: 1])
    }
}
