import Foundation
import NativePostgres
import Testing

@testable import IngestCheck
@testable import IngestConfig
@testable import IngestCore
@testable import IngestJournal
@testable import IngestStages
@testable import IngestTestSupport
@testable import IngestJournalTestSupport

/// `verify:` against a backend that does not refuse a repeated completion with 409 (the fixture's
/// `--accept-repeats`, which counts each repeat it acts on): a complete the journal shows as sent without an answer
/// is checked with seed 003's playback read before it is repeated — 200 counts it as done, 404 sends it, anything
/// else fails the file with the server's answer.
@Suite(.serialized) struct VerifiedCallTests {
    static let seed = SeedPipelinesCallbackCrashTests.seeds[2]
    static let complete = "/api/v1/visit-transcripts/audio/upload/complete"
    static let playback = "/api/v1/visit-transcripts/audio/playback/"
    static let pipeline = TestPaths.root + "/pipelines/vet-audio.yml"

    /// Runs vet-audio on its one recording and `kill -9`s it while the backend holds the answer to a complete it
    /// already acted on; returns the visit id the complete was for.
    static func killMidComplete(in folder: TemporaryFolder, backend: FixtureBackend) throws -> String {
        let path = folder.path + "/" + seed.input
        try copySample(seed.sample, to: path)
        try backend.setFaults(
            #"[{"method": "POST", "path": "\#(complete)/", "action": "act_then_hang", "seconds": 30}]"#)
        try killIngest(
            ["run", pipeline, "in", "-q"], in: folder.path,
            environment: SeedPipelinesCallbackCrashTests.environment(backend), polls: 600, at: "the held complete"
        ) { (try? backend.counts("callbacks"))?[complete] == 1 }
        try backend.setFaults("[]")
        return try visitIDs(backend).first ?? ""
    }

    /// The visit ids completes were sent for, from the bodies the backend received.
    static func visitIDs(_ backend: FixtureBackend) throws -> [String] {
        let bodies = try backend.state()["json"] as? [String: Any] ?? [:]
        return bodies.keys.filter { $0.hasPrefix(complete + "/") }.map { String($0.dropFirst(complete.count + 1)) }
    }

    static func run(_ folder: TemporaryFolder, _ backend: FixtureBackend) throws -> CommandResult {
        try runCommand(
            TestPaths.ingest, ["run", pipeline, "in"],
            environment: environmentWithoutProxies(SeedPipelinesCallbackCrashTests.environment(backend)),
            directory: folder.path)
    }

    @Test func aCompleteCutShortByAKillIsVerifiedNotRepeated() throws {
        let backend = try FixtureBackend(bearer: "vet-jwt", acceptRepeats: true)
        defer { backend.stop() }
        let folder = try TemporaryFolder("verify-kill")
        defer { folder.remove() }
        let visitID = try Self.killMidComplete(in: folder, backend: backend)
        let second = try Self.run(folder, backend)
        #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
        let note = "already done: verified by GET \(backend.base)\(Self.playback)\(visitID): 200"
        #expect(second.stdout.contains("ok    \(Self.seed.input)"), "\(second.stdout)")
        #expect(second.stdout.contains("(\(note))"), "\(second.stdout)")
        // The backend acted once: the complete was not sent again.
        #expect(try backend.counts("callbacks") == [Self.complete: 1])
        #expect(try backend.counts("callback_repeats").isEmpty, "the complete was repeated")
        let playbacks = try backend.requests().filter { ($0[1] as? String)?.hasPrefix(Self.playback) == true }
        #expect(playbacks.map { "\($0[0]) \($0[2])" } == ["GET 200"])

        // The note and the playback answer (under the stage's `as: visit`, signature redacted) are journaled.
        let report = try runCommand(
            TestPaths.ingest, ["report", "--format", "jsonl"], environment: environmentWithoutProxies(),
            directory: folder.path)
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(report.stdout.utf8)) as? [String: Any], "\(report.stdout)")
        let facts = try #require(object["facts"] as? [String: Any])
        #expect(facts["notes"] as? [String] == [note])
        let visit = try #require(facts["visit"] as? [String: Any], "\(facts)")
        #expect(visit["visit_id"] as? String == visitID)
        #expect(visit["filename"] as? String == "visit.m4a")
        let url = try #require(visit["presigned_url"] as? String)
        #expect(url.contains("X-Amz-Signature=REDACTED"), "\(url)")
    }

    /// The server completes the visit, then the connection is reset before its answer: the retry is preceded by the
    /// playback read, which says it is done, so the complete is not sent twice within one run either.
    @Test func aRetryAfterALostAnswerIsVerifiedFirst() throws {
        let backend = try FixtureBackend(bearer: "vet-jwt", acceptRepeats: true)
        defer { backend.stop() }
        let folder = try TemporaryFolder("verify-reset")
        defer { folder.remove() }
        let path = folder.path + "/" + Self.seed.input
        try copySample(Self.seed.sample, to: path)
        try backend.setFaults(
            #"[{"method": "POST", "path": "\#(Self.complete)/", "action": "act_then_reset", "times": 1}]"#)
        let result = try Self.run(folder, backend)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(try backend.counts("callbacks") == [Self.complete: 1])
        #expect(try backend.counts("callback_repeats").isEmpty, "the complete was repeated")
        let visitID = try #require(try Self.visitIDs(backend).first)
        #expect(
            result.stdout.contains("(already done: verified by GET \(backend.base)\(Self.playback)\(visitID): 200)"),
            "\(result.stdout)")
        let calls = try backend.requests().map { "\($0[0]) \($0[1]) \($0[2])" }.filter { $0.contains(visitID) }
        #expect(
            calls == ["POST \(Self.complete)/\(visitID) reset after 200", "GET \(Self.playback)\(visitID) 200"],
            "\(calls)")
    }

    /// A complete that failed (500 three times) may have reached the server: the next run asks the playback first,
    /// which answers 404 (not completed), so the complete is sent — once.
    @Test func aNotFoundAnswerMakesTheCall() throws {
        let backend = try FixtureBackend(bearer: "vet-jwt", acceptRepeats: true)
        defer { backend.stop() }
        let folder = try TemporaryFolder("verify-404")
        defer { folder.remove() }
        let path = folder.path + "/" + Self.seed.input
        try copySample(Self.seed.sample, to: path)
        try backend.setFaults(
            #"[{"method": "POST", "path": "\#(Self.complete)/", "action": "status", "status": 500, "times": 3}]"#)
        let first = try Self.run(folder, backend)
        #expect(first.status == 1, "\(first.stdout)\(first.stderr)")
        #expect(try backend.counts("callbacks").isEmpty)

        let second = try Self.run(folder, backend)
        #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
        #expect(!second.stdout.contains("already done"), "\(second.stdout)")
        #expect(try backend.counts("callbacks") == [Self.complete: 1])
        let visitID = try #require(try Self.visitIDs(backend).first)
        let calls = try backend.requests().map { "\($0[0]) \($0[1]) \($0[2])" }
            .filter { $0.contains(visitID) }
        #expect(
            calls == Array(repeating: "POST \(Self.complete)/\(visitID) 500", count: 3) + [
                "GET \(Self.playback)\(visitID) 404", "POST \(Self.complete)/\(visitID) 200",
            ], "\(calls)")
    }

    /// Neither done nor not done (a 403 to the playback): the file fails with the server's answer and the complete
    /// is not repeated; a later run whose verify is answered finishes it.
    @Test func anyOtherAnswerFailsTheFileWithTheServersMessage() throws {
        let backend = try FixtureBackend(bearer: "vet-jwt", acceptRepeats: true)
        defer { backend.stop() }
        let folder = try TemporaryFolder("verify-403")
        defer { folder.remove() }
        let visitID = try Self.killMidComplete(in: folder, backend: backend)
        try backend.setFaults(
            #"""
            [{"method": "GET", "path": "\#(Self.playback)", "action": "status", "status": 403,
              "body": {"detail": "token lacks playback scope"}}]
            """#)
        let second = try Self.run(folder, backend)
        #expect(second.status == 1, "\(second.stdout)\(second.stderr)")
        #expect(second.stdout.contains("request.verify: "), "\(second.stdout)")
        #expect(
            second.stdout.contains(
                "GET \(backend.base)\(Self.playback)\(visitID) answered 403 Forbidden: token lacks playback scope, "
                    + "which says neither done nor not done (404), so the call is not repeated"), "\(second.stdout)")
        #expect(try backend.counts("callbacks") == [Self.complete: 1])
        #expect(try backend.counts("callback_repeats").isEmpty)

        let third = try Self.run(folder, backend)
        #expect(third.status == 0, "\(third.stdout)\(third.stderr)")
        #expect(third.stdout.contains("(already done: verified by GET "), "\(third.stdout)")
        #expect(try backend.counts("callback_repeats").isEmpty)
    }

    /// `verify:` is checked when the file loads: a read, with statuses that can mean done.
    @Test func verifyOptionsAreChecked() throws {
        func load(_ verify: String) throws -> Pipeline {
            try Pipeline.parse(
                yaml: """
                    version: 1
                    name: v
                    stages:
                      - request:
                          url: http://127.0.0.1:1/complete
                          verify: \(verify)
                    """, source: "v.yml", environment: [:])
        }
        let loaded = try load("{url: http://127.0.0.1:1/read, expect: [200, 204], headers: {X-A: b}}")
        let stage = try #require(loaded.stages.first?.stage as? RequestStage)
        #expect(stage.options.verify?.expect == [200, 204])
        #expect(stage.options.verify?.method == "GET")
        for (bad, message) in [
            ("{url: x, expect: [200, 404]}", "verify: expect cannot list 404"),
            ("{url: x, method: POST}", "verify: method must be GET or HEAD (a read), found 'POST'"),
            ("{url: x, expect: [999]}", "verify: expect: 999 is not an HTTP status"),
            ("{expect: [200]}", "missing required option 'url'"),
            ("{url: x, expected: [200]}", "unknown option 'expected'"),
        ] {
            #expect(throws: (any Error).self, "\(bad)") { try load(bad) }
            do {
                _ = try load(bad)
            } catch {
                #expect("\(error)".contains(message), "\(bad): \(error)")
            }
        }
        // The JSON Schema describes it.
        let schema = try #require(StageRegistry.descriptor(named: "request")?.optionsSchema)
        let verify = try #require(schema.lookup("properties.verify.properties"))
        #expect(verify.lookup("url") != nil && verify.lookup("expect") != nil && verify.lookup("headers") != nil)
    }

    /// A verify that reads the stage's own `as:` answer (which it is sent before) is a lint warning; reading an
    /// earlier stage's answer is not.
    @Test func lintWarnsWhenVerifyReadsItsOwnAnswer() {
        let yaml = """
            version: 1
            name: x
            stages:
              - request: { url: "http://127.0.0.1:1/ticket", as: ticket }
              - request:
                  url: "http://127.0.0.1:1/complete/{{ticket.id}}"
                  verify: { url: "http://127.0.0.1:1/read/{{done.id}}/{{ticket.id}}" }
                  as: done
            """
        let issues = Pipeline.lint(yaml: yaml, source: "l.yml", environment: [:])
        #expect(issues.map(\.severity) == [.warning], "\(issues)")
        #expect(issues.first?.location?.line == 7)
        #expect(
            issues.first?.message
                == "verify: {{done.…}} is this stage's own answer, which does not exist yet when verify is sent "
                + "(before the call); use what an earlier stage answered")
        let fine = yaml.replacingOccurrences(of: "{{done.id}}/", with: "")
        #expect(Pipeline.lint(yaml: fine, source: "l.yml", environment: [:]).isEmpty)
    }
}

/// Three `ingest run` workers share 150 recordings on one PostgreSQL journal against a backend that accepts a
/// repeated complete (no 409). Midway, the backend holds the answer to one complete it acted on, and the worker
/// that sent it is `kill -9`ed: the worker that takes its lease over finds that complete started and unanswered, and
/// its `verify:` (the playback read) says it was done, so every recording is completed exactly once.
@Suite(.serialized) struct VerifiedCallLeaseTests {
    /// `count` copies of Samples/good/voice.m4a under `in/`, each in its own pet's folder: seed 003 takes one
    /// recording per pet per day.
    static func makeRecordings(_ count: Int, in folder: TemporaryFolder) throws {
        let sample = TestPaths.root + "/Samples/good/voice.m4a"
        for index in 0..<count {
            let path = folder.path + "/in/\(UUID().uuidString.lowercased())/rec\(String(format: "%03d", index)).m4a"
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: sample, toPath: path)
        }
    }

    @Test(.postgres) func threeWorkersOneKilledMidCompleteEveryVisitCompletedOnce() throws {
        let server = try PostgresServer.shared()
        let url = try server.createDatabase()
        let backend = try FixtureBackend(bearer: "vet-jwt", acceptRepeats: true)
        defer { backend.stop() }
        let folder = try TemporaryFolder("verify-workers")
        defer { folder.remove() }
        let count = 150
        try Self.makeRecordings(count, in: folder)
        let environment = SeedPipelinesCallbackCrashTests.environment(backend)
        // One file at a time per worker, so the killed worker has exactly the held complete in flight (a ticket
        // cut short would meet seed 003's one-recording-per-pet rule, which is not what this test is about).
        let workers = try (0..<3).map { number in
            try startIngest(
                [
                    "run", VerifiedCallTests.pipeline, "in", "-q", "--journal", url, "--lease-seconds", "2",
                    "--concurrency", "1", "--work-dir", "w\(number)/work", "--report", "w\(number).jsonl",
                ], in: folder.path, environment: environment)
        }
        defer { for process in workers where process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let observer = try PostgresJournal(url: url)
        defer { try? observer.close() }
        try waitUntilDone(50, in: observer) { workers.allSatisfy(\.isRunning) }
        // Midway: the next complete is acted on and its answer held; its worker is the one killed.
        try backend.setFaults(
            #"""
            [{"method": "POST", "path": "\#(VerifiedCallTests.complete)/", "action": "act_then_hang",
              "seconds": 60, "times": 1}]
            """#)
        var held: String?
        var polls = 0
        while held == nil {
            held = try backend.requests().first { "\($0[2])" == "held 200" }?[1] as? String
            polls += 1
            try #require(polls < 600, "no complete was held")
            if held == nil { usleep(50_000) }
        }
        let bodies = try backend.state()["json"] as? [String: [[String: Any]]] ?? [:]
        let name = try #require(
            (bodies[held ?? ""]?.first?["device_metadata"] as? [String: Any])?["original_filename"] as? String)
        let database = try PostgresConnection(conninfo: url)
        let owner = try #require(
            try database.execute(
                "SELECT owner FROM ingest_leases WHERE relative_path LIKE $1 AND expires_at IS NOT NULL",
                ["%/" + name]
            ).first?.first ?? nil, "no live lease on \(name)")
        let victim = try #require(
            workers.firstIndex { owner.contains(":\($0.processIdentifier):") }, "\(owner) is none of the workers")
        kill(workers[victim].processIdentifier, SIGKILL)
        for process in workers { process.waitUntilExit() }
        for (number, process) in workers.enumerated() where number != victim {
            #expect(process.terminationStatus == 0, "worker \(number)")
        }

        #expect(try observer.counts() == [.done: count])
        #expect(try backend.objects().count == count)
        #expect(try backend.counts("callbacks") == [VerifiedCallTests.complete: count])
        #expect(try backend.counts("callback_repeats").isEmpty, "a visit was completed twice")
        #expect(try backend.counts("tickets") == ["/api/v1/visit-transcripts/audio/upload/initiate": count])
        // The held complete's file was finished by a survivor, verified by the playback read.
        var notes: [String] = []
        for number in 0..<3 where number != victim {
            let text = (try? String(contentsOfFile: folder.path + "/w\(number).jsonl", encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n") where line.contains("/\(name)\"") {
                let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                // The survivor that finished it (the other may report it as already done, with its facts).
                guard object?["status"] as? String == "passed" else { continue }
                notes += ((object?["facts"] as? [String: Any])?["notes"] as? [String]) ?? []
            }
        }
        let visitID = String((held ?? "").dropFirst(VerifiedCallTests.complete.count + 1))
        #expect(
            notes == ["already done: verified by GET \(backend.base)\(VerifiedCallTests.playback)\(visitID): 200"],
            "\(notes)")
    }
}
