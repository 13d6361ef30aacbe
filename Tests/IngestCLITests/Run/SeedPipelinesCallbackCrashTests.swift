import Foundation
import Testing

@testable import IngestCore
@testable import IngestTestSupport

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
            // A complete cut short by a kill is verified once this has passed since it started (default 60 s).
            "HELPPET_SETTLE": "1s",
        ]
    }

    /// Starts the seed's pipeline on its one file with `faults`, kills it once `ready` holds (polling the backend,
    /// bounded), and runs it again without faults; returns the second run.
    static func killThenResume(
        _ seed: Seed, faults: String, in folder: TemporaryFolder, backend: FixtureBackend,
        ready: (FixtureBackend) -> Bool
    ) throws -> CommandResult {
        let path = folder.path + "/" + seed.input
        try copySample(seed.sample, to: path)
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
        try copySample(seed.sample, to: path)
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
        let ttl = 60.0  // never reached in real time: the backend's clock is moved past it
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
        // Once the ticket the killed run was given has expired (the backend's clock moved past it), the backend
        // renews it for the same visit.
        try backend.advanceClock(by: ttl + 1)
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
