import Foundation
import Testing

@testable import Ingest

/// Seed 000's Firestore job, its wait and its conflict handling against Google's own Firestore emulator (the real
/// server's REST API, offline), besides SeedPipelinesFirestore's runs against Tests/Fixtures/firestore.py: the
/// stages of `pipelines/hockey-video-signed-put.yml` up to `poll` (its `save` downloads result URLs only the real
/// analysis backend makes), with the fixture backend handing out the signed URLs. The test plays the analysis
/// worker, moving each job as the seed's backend does. Skipped, and shown as skipped, where the emulator is absent.
@Suite(
    .serialized,
    .enabled(
        if: FirestoreEmulator.isInstalled,
        "Google's Firestore emulator (\(FirestoreEmulator.directory)) or java is not installed here: skipped"))
struct SeedPipelinesFirestoreEmulator {
    /// The seed pipeline's text up to its `save` stage.
    static func pipeline(in folder: TemporaryFolder) throws -> String {
        let text = try String(
            contentsOfFile: TestPaths.root + "/pipelines/hockey-video-signed-put.yml", encoding: .utf8)
        let save = try #require(text.range(of: "\n  - save:"), "the seed pipeline has no save stage any more")
        return try folder.file("seed000.yml", String(text[..<save.lowerBound]) + "\n")
    }

    struct Setup {
        let emulator: FirestoreEmulator
        let backend: FixtureBackend
        let folder: TemporaryFolder
        let project: String
        let pipeline: String

        func environment(firestore: String? = nil) -> [String: String] {
            [
                "PUCKBUDDY_BACKEND": backend.base + "/api", "PUCKBUDDY_USER_ID": "uid-42",
                "FIRESTORE_URL": firestore ?? emulator.base, "FIREBASE_PROJECT": project,
                "FIREBASE_TOKEN": FirestoreEmulator.idToken(uid: "uid-42", project: project),
                "PUCKBUDDY_POLL_INTERVAL": "0.1s", "PUCKBUDDY_POLL_MAX_INTERVAL": "0.2s",
            ]
        }

        func run(_ arguments: [String], firestore: String? = nil) throws -> CommandResult {
            try runCommand(
                TestPaths.ingest, arguments, environment: environmentWithoutProxies(environment(firestore: firestore)),
                directory: folder.path)
        }

        func jobs() throws -> [[String: Any]] { try emulator.documents(project: project, "jobs") }

        func stop() {
            backend.stop()
            folder.remove()
        }
    }

    /// A fresh project (the emulator keeps each project's documents apart), backend and folder with `videos`.
    static func setUp(_ name: String, videos: [String]) throws -> Setup {
        let emulator = try FirestoreEmulator.shared()
        let folder = try TemporaryFolder("emulator-" + name)
        for video in videos { try copySample("good/plain.mov", to: folder.path + "/in/" + video) }
        return Setup(
            emulator: emulator, backend: try FixtureBackend(), folder: folder,
            project: "puck-\(name)-\(UUID().uuidString.prefix(8).lowercased())", pipeline: try pipeline(in: folder))
    }

    /// Tests/Fixtures/lost_answer.py in front of the emulator, losing the answers of the first `losing` commits.
    static func proxy(to setup: Setup, losing: Int) throws -> FixtureProcess {
        let host = setup.emulator.base.replacingOccurrences(of: "http://", with: "")
        return try FixtureProcess(
            "lost_answer.py", ["--upstream", host, "--lose", "POST /v1/projects/", "--times", String(losing)],
            portFile: setup.folder.path + "/proxy.port", failure: "Tests/Fixtures/lost_answer.py did not start")
    }

    static func field(_ document: [String: Any], _ name: String) -> Any? {
        ((document["fields"] as? [String: Any])?[name] as? [String: Any])?.values.first
    }

    @Test func eachVideosJobIsCreatedInFirestoreAndWaitedFor() throws {
        let setup = try Self.setUp("created", videos: ["game1.mov", "away/game2.mov"])
        defer { setup.stop() }
        let worker = EmulatorAnalysisWorker(emulator: setup.emulator, project: setup.project)
        worker.start()
        defer { worker.stop() }
        let result = try setup.run(["run", setup.pipeline, "in", "--report", "r.jsonl"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let jobs = try setup.jobs()
        #expect(jobs.count == 2, "\(jobs)")
        let paths = Set(jobs.compactMap { Self.field($0, "storagePath") as? String })
        #expect(paths == ["users/uid-42/game1.mov", "users/uid-42/game2.mov"])
        for job in jobs {
            #expect(Self.field(job, "userId") as? String == "uid-42")
            #expect(Self.field(job, "delivery_method") as? String == "signed_urls")
            #expect(Self.field(job, "status") as? String == "completed")
            // Server timestamps: the emulator filled them in.
            #expect(Self.field(job, "createdAt") is String && Self.field(job, "updatedAt") is String, "\(job)")
        }
        let report = try String(contentsOfFile: setup.folder.path + "/r.jsonl", encoding: .utf8)
        #expect(report.contains("Great effort in game1.mov: 3 shots, 2 on target."), "\(report)")
    }

    @Test func aFailedJobFailsItsFileWithTheJobsError() throws {
        let setup = try Self.setUp("failed", videos: ["fail-shift.mov", "shift.mov"])
        defer { setup.stop() }
        let worker = EmulatorAnalysisWorker(emulator: setup.emulator, project: setup.project)
        worker.start()
        defer { worker.stop() }
        let result = try setup.run(["run", setup.pipeline, "in"])
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        #expect(
            result.stdout.contains("poll.failed: the job ended as failed: Could not detect a player in the video"),
            "\(result.stdout)")
        #expect(result.stdout.contains("ok    in/shift.mov"), "\(result.stdout)")
    }

    /// Killed while its job is queued (the run has read it twice), the next run waits for that job: no second
    /// ticket, and the emulator holds one job, not two. The proxy loses nothing here; it counts the calls.
    @Test func killedWhileWaitingTheNextRunWaitsForTheSameJob() throws {
        let setup = try Self.setUp("killed", videos: ["shift.mov"])
        defer { setup.stop() }
        let proxy = try Self.proxy(to: setup, losing: 0)
        defer { proxy.stop() }
        let proxied = "http://127.0.0.1:\(proxy.ports[0])"
        // Both runs read the same variables: another FIRESTORE_URL or token is another pipeline to the journal, whose
        // file then starts over (a new ticket, and a create that meets the first run's job as not its own).
        let environment = setup.environment(firestore: proxied)
        try killIngest(
            ["run", setup.pipeline, "in", "-q"], in: setup.folder.path, environment: environment,
            at: "polling the job"
        ) { ((try? fixtureState(proxied + "/_lost"))?["forwarded"] as? Int ?? 0) >= 3 }
        #expect(try setup.jobs().count == 1)
        let worker = EmulatorAnalysisWorker(emulator: setup.emulator, project: setup.project)
        worker.start()
        defer { worker.stop() }
        let second = try runCommand(
            TestPaths.ingest, ["run", setup.pipeline, "in"], environment: environmentWithoutProxies(environment),
            directory: setup.folder.path)
        #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
        #expect(try setup.jobs().count == 1)
        #expect(try setup.backend.counts("tickets") == ["/api/upload-url": 1], "\(second.stdout)")
    }

    /// The job's create reached Firestore but its answer was lost (the connection reset): the retry meets the
    /// emulator's own ALREADY_EXISTS for that document, which counts as done; one job.
    @Test func aCreateWhoseAnswerWasLostCountsAsDoneOnItsRepeat() throws {
        let setup = try Self.setUp("lost-answer", videos: ["shift.mov"])
        defer { setup.stop() }
        let proxy = try Self.proxy(to: setup, losing: 1)
        defer { proxy.stop() }
        let worker = EmulatorAnalysisWorker(emulator: setup.emulator, project: setup.project)
        worker.start()
        defer { worker.stop() }
        let result = try setup.run(["run", setup.pipeline, "in"], firestore: "http://127.0.0.1:\(proxy.ports[0])")
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("already done: the server answered 409 Conflict"), "\(result.stdout)")
        let lost = try fixtureState("http://127.0.0.1:\(proxy.ports[0])/_lost")
        #expect(lost["lost"] as? Int == 1, "\(lost)")
        #expect(try setup.jobs().count == 1)
    }
}

/// The seed's analysis worker, played against the emulator: every 0.1 s each job in `jobs` moves a step — queued to
/// processing (progress 50) to completed with its summaries, or to failed with an `error` when its storagePath has
/// "fail" in it — through Firestore's REST PATCH, as the seed's backend writes them.
final class EmulatorAnalysisWorker: @unchecked Sendable {
    let emulator: FirestoreEmulator
    let project: String
    private let lock = NSLock()
    private var running = true
    private var thread: Thread?
    /// Signalled when the thread has ended.
    private let ended = DispatchSemaphore(value: 0)

    init(emulator: FirestoreEmulator, project: String) {
        self.emulator = emulator
        self.project = project
    }

    func start() {
        let thread = Thread { [self] in
            while lock.withLock({ running }) {
                for job in (try? emulator.documents(project: project, "jobs")) ?? [] { try? advance(job) }
                usleep(100_000)
            }
            ended.signal()
        }
        self.thread = thread
        thread.start()
    }

    func stop() {
        lock.withLock { running = false }
        if thread != nil { ended.wait() }
    }

    private func advance(_ job: [String: Any]) throws {
        guard let name = job["name"] as? String, let path = name.components(separatedBy: "/documents").last else {
            return
        }
        let status = SeedPipelinesFirestoreEmulator.field(job, "status") as? String
        let storage = SeedPipelinesFirestoreEmulator.field(job, "storagePath") as? String ?? ""
        let fields: String
        switch status {
        case "queued":
            fields = #""status": {"stringValue": "processing"}, "progress": {"integerValue": "50"}"#
        case "processing" where storage.contains("fail"):
            fields =
                #""status": {"stringValue": "failed"}, "error": {"stringValue": "Could not detect a player in the video (too dark?)"}"#
        case "processing":
            let clip = storage.split(separator: "/").last.map(String.init) ?? storage
            fields =
                #""status": {"stringValue": "completed"}, "progress": {"integerValue": "100"}, "#
                + #""parent_summary": {"stringValue": "Great effort in \#(clip): 3 shots, 2 on target."}"#
        default:
            return
        }
        let names = try NSRegularExpression(pattern: #""([a-z_]+)": \{"#)
        let mask = names.matches(in: fields, range: NSRange(fields.startIndex..., in: fields)).compactMap {
            Range($0.range(at: 1), in: fields).map { "updateMask.fieldPaths=" + fields[$0] }
        }
        _ = try emulator.call(
            "PATCH", project: project, path + "?" + mask.joined(separator: "&"), json: "{\"fields\": {\(fields)}}")
    }
}
