import Foundation
import NativeCurl
import Testing

@testable import IngestCore
@testable import IngestTestSupport

/// Seed 000 to the end (`pipelines/hockey-video-signed-put.yml`): each video is PUT through its signed URL, its
/// analysis job created in Firestore over REST, waited for, and its feedback saved beside it — against the fixture
/// backend's Firestore and analysis worker (Tests/Fixtures/firestore.py), which speak Firestore's REST shapes.
@Suite(.serialized) struct SeedPipelinesFirestore {
    static let pipeline = TestPaths.root + "/pipelines/hockey-video-signed-put.yml"
    static let token = "firebase-id-token-7f3a"

    static func environment(_ backend: FixtureBackend, token: String = token) -> [String: String] {
        [
            "PUCKBUDDY_BACKEND": backend.base + "/api", "PUCKBUDDY_USER_ID": "uid-42", "FIRESTORE_URL": backend.base,
            "FIREBASE_PROJECT": "puck-buddy", "FIREBASE_TOKEN": token, "PUCKBUDDY_POLL_INTERVAL": "0.1s",
            "PUCKBUDDY_POLL_MAX_INTERVAL": "0.2s",
        ]
    }

    static func backend(faults: String = "[]") throws -> FixtureBackend {
        try FixtureBackend(faults: faults, firebaseToken: token, jobStep: 0.1)
    }

    /// The fixture's Firestore documents under `jobs/`, by name, with their typed fields.
    static func jobs(_ backend: FixtureBackend) throws -> [String: [String: Any]] {
        let firestore = try #require(try backend.state()["firestore"] as? [String: Any])
        let documents = (firestore["documents"] as? [String: [String: Any]]) ?? [:]
        return documents.filter { $0.key.contains("/documents/jobs/") }
    }

    static func firestoreCount(_ backend: FixtureBackend, _ name: String) throws -> Int {
        ((try backend.state()["firestore"] as? [String: Any])?[name] as? Int) ?? 0
    }

    static func field(_ job: [String: Any], _ name: String) -> Any? {
        ((job["fields"] as? [String: Any])?[name] as? [String: Any])?.values.first
    }

    static func run(_ arguments: [String], in folder: TemporaryFolder, _ environment: [String: String]) throws
        -> CommandResult
    {
        try runCommand(
            TestPaths.ingest, arguments, environment: environmentWithoutProxies(environment), directory: folder.path)
    }

    /// Firestore's reads answer 503 once and 429 (Retry-After: 1) once on the way: waited out, not failed.
    @Test func aFolderOfVideosIsUploadedAnalysedAndItsFeedbackSavedBesideEach() throws {
        let backend = try Self.backend(
            faults: #"[{"method": "GET", "path": "/v1/", "action": "status", "status": 503, "times": 1}, "#
                + #"{"method": "GET", "path": "/v1/", "action": "status", "status": 429, "retry_after": "1", "#
                + #""times": 1}]"#)
        defer { backend.stop() }
        let folder = try TemporaryFolder("seed000-firestore")
        defer { folder.remove() }
        let names = ["in/game1.mov", "in/game2.mov", "in/away/game3.mov"]
        for name in names { try copySample("good/plain.mov", to: folder.path + "/" + name) }
        let result = try Self.run(["run", Self.pipeline, "in"], in: folder, Self.environment(backend))
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        for name in names {
            let stem = folder.path + "/" + (name as NSString).deletingPathExtension
            let clip = (name as NSString).lastPathComponent
            let parent = try String(contentsOfFile: stem + ".parent.txt", encoding: .utf8)
            let coach = try String(contentsOfFile: stem + ".coach.txt", encoding: .utf8)
            #expect(parent == "Great effort in \(clip): 3 shots, 2 on target.")
            #expect(coach.hasPrefix("What went well:\n") && coach.hasSuffix("Follow-through on \(clip)"))
        }
        // One job per video, with the guide's fields: the storage path of its upload, and server timestamps.
        let jobs = try Self.jobs(backend)
        #expect(jobs.count == 3)
        #expect(try Self.firestoreCount(backend, "commits") == 3)
        let paths = Set(jobs.values.compactMap { Self.field($0, "storagePath") as? String })
        #expect(paths == ["users/uid-42/game1.mov", "users/uid-42/game2.mov", "users/uid-42/game3.mov"])
        for job in jobs.values {
            #expect(Self.field(job, "userId") as? String == "uid-42")
            #expect(Self.field(job, "delivery_method") as? String == "signed_urls")
            #expect(Self.field(job, "status") as? String == "completed")
            #expect(Self.field(job, "createdAt") as? String == job["createTime"] as? String)
        }
        #expect(try backend.objects().values.allSatisfy { $0["count"] as? Int == 1 })
        let statuses = try backend.requests().map { "\($0[0]) \($0[2])" }
        #expect(statuses.contains("GET 503") && statuses.contains("GET 429"), "\(statuses)")
        // Signed result URLs never shown, and no temp file left beside the videos.
        let shown = result.stdout + result.stderr
        #expect(shown.range(of: "X-Goog-Signature=[0-9a-f]", options: .regularExpression) == nil, "\(shown)")
        let left = try FileManager.default.subpathsOfDirectory(atPath: folder.path + "/in")
        #expect(!left.contains { $0.hasSuffix(".tmp") }, "\(left)")
    }

    @Test func aFailedJobFailsItsFileWithTheJobsErrorAndSavesNothing() throws {
        let backend = try Self.backend()
        defer { backend.stop() }
        let folder = try TemporaryFolder("seed000-failed-job")
        defer { folder.remove() }
        try copySample("good/plain.mov", to: folder.path + "/in/fail-shift.mov")
        try copySample("good/plain.mov", to: folder.path + "/in/shift.mov")
        let result = try Self.run(["run", Self.pipeline, "in"], in: folder, Self.environment(backend))
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        #expect(
            result.stdout.contains(
                "poll.failed: the job ended as failed: Could not detect a player in the video (too dark?)"),
            "\(result.stdout)")
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/in/fail-shift.coach.txt"))
        #expect(FileManager.default.fileExists(atPath: folder.path + "/in/shift.coach.txt"))
    }

    /// Killed while the job is being analysed (the worker held), the next run waits for the same job: no second
    /// ticket, upload or job, and the feedback is saved.
    @Test func killedWhileWaitingTheNextRunWaitsForTheSameJob() throws {
        let backend = try Self.backend()
        defer { backend.stop() }
        let folder = try TemporaryFolder("seed000-kill-wait")
        defer { folder.remove() }
        try copySample("good/plain.mov", to: folder.path + "/in/shift.mov")
        try Self.holdJobs(backend, true)
        try killIngest(
            ["run", Self.pipeline, "in", "-q"], in: folder.path, environment: Self.environment(backend),
            at: "polling the job"
        ) { ((try? Self.firestoreCount(backend, "gets")) ?? 0) >= 2 }
        let status = try Self.run(["status"], in: folder, [:])
        #expect(status.stdout.contains("in/shift.mov  its job was still running"), "\(status.stdout)")
        try Self.holdJobs(backend, false)
        let second = try Self.run(["run", Self.pipeline, "in"], in: folder, Self.environment(backend))
        #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
        #expect(try Self.firestoreCount(backend, "commits") == 1)
        #expect(try Self.jobs(backend).count == 1)
        #expect(try backend.counts("tickets") == ["/api/upload-url": 1])
        #expect(try backend.objects()["users/uid-42/shift.mov"]?["count"] as? Int == 1)
        #expect(FileManager.default.fileExists(atPath: folder.path + "/in/shift.coach.txt"))
    }

    /// Killed after Firestore created the job but before its answer arrived: the repeat meets ALREADY_EXISTS for the
    /// file's own document, which counts as done; one job.
    @Test func aJobCreatedBeforeAKillIsNotCreatedAgain() throws {
        let backend = try Self.backend()
        defer { backend.stop() }
        let folder = try TemporaryFolder("seed000-kill-commit")
        defer { folder.remove() }
        try copySample("good/plain.mov", to: folder.path + "/in/shift.mov")
        try backend.setFaults(#"[{"method": "POST", "path": "/v1/", "action": "act_then_hang", "seconds": 30}]"#)
        try killIngest(
            ["run", Self.pipeline, "in", "-q"], in: folder.path, environment: Self.environment(backend),
            at: "the job created, its answer held"
        ) { ((try? Self.firestoreCount(backend, "commits")) ?? 0) == 1 }
        try backend.setFaults("[]")
        let second = try Self.run(["run", Self.pipeline, "in"], in: folder, Self.environment(backend))
        #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
        #expect(second.stdout.contains("(already done: the server answered 409 Conflict: Document already exists: "))
        #expect(try Self.jobs(backend).count == 1)
        #expect(try backend.objects()["users/uid-42/shift.mov"]?["count"] as? Int == 1)
        #expect(FileManager.default.fileExists(atPath: folder.path + "/in/shift.parent.txt"))
    }

    @Test func anExpiredFirebaseTokenIsSaidClearlyAndNotShown() throws {
        let backend = try Self.backend()
        defer { backend.stop() }
        let folder = try TemporaryFolder("seed000-expired-token")
        defer { folder.remove() }
        try copySample("good/plain.mov", to: folder.path + "/in/shift.mov")
        let expired = "expired-id-token-51c9e0"
        let result = try Self.run(["run", Self.pipeline, "in"], in: folder, Self.environment(backend, token: expired))
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("answered 401 Unauthorized: Request had invalid authentication credentials"))
        #expect(
            result.stdout.contains("(the ID token was refused: a Firebase ID token expires an hour after it is issued"),
            "\(result.stdout)")
        // Issue #29 §5: the variable the Authorization header reads, by name.
        #expect(
            result.stdout.contains("put a fresh one in FIREBASE_TOKEN (the variable the Authorization header reads)"),
            "\(result.stdout)")
        #expect(!(result.stdout + result.stderr).contains(expired))
        #expect(try Self.jobs(backend).isEmpty)
    }

    /// A job still running at `timeout` fails the file (`poll.timeout`), `ingest status` says so, and the next run
    /// waits for the same job (created once) until it ends. The timeout leaves room for a first answer on a loaded
    /// machine (0.6 s once ran out inside the first GET, before any state was known).
    @Test func aJobStillRunningAtTheTimeoutIsWaitedForAgainNextRun() throws {
        let backend = try Self.backend()
        defer { backend.stop() }
        let folder = try TemporaryFolder("poll-timeout")
        defer { folder.remove() }
        try copySample("good/plain.mov", to: folder.path + "/in/shift.mov")
        try folder.file(
            "wait.yml",
            """
            version: 1
            name: wait
            stages:
              - request:
                  url: "${FIRESTORE_URL}/v1/projects/pb/databases/(default)/documents:commit"
                  headers: { Authorization: "Bearer ${FIREBASE_TOKEN}" }
                  firestore:
                    document: "jobs/{{uuid}}"
                    fields: { storagePath: "users/u/{{file.name}}", status: queued, progress: 0 }
                  as: job
              - poll:
                  url: "${FIRESTORE_URL}/v1/projects/pb/databases/(default)/documents/jobs/{{job.id}}"
                  headers: { Authorization: "Bearer ${FIREBASE_TOKEN}" }
                  format: firestore
                  until: { fields.status: [completed, failed] }
                  fail_when: { fields.status: failed }
                  error: fields.error
                  interval: 0.1s
                  timeout: 3s
            """)
        let environment = Self.environment(backend)
        try Self.holdJobs(backend, true)
        let first = try Self.run(["run", "wait.yml", "in"], in: folder, environment)
        #expect(first.status == 1, "\(first.stdout)\(first.stderr)")
        #expect(first.stdout.contains("poll.timeout: the job is still queued after "), "\(first.stdout)")
        let status = try Self.run(["status"], in: folder, [:])
        #expect(status.stdout.contains("the next run waits for the same job again"), "\(status.stdout)")
        try Self.holdJobs(backend, false)
        let second = try Self.run(["run", "wait.yml", "in"], in: folder, environment)
        #expect(second.stdout.contains("poll.failed: the job ended as failed: no video stored at users/u/shift.mov"))
        #expect(try Self.firestoreCount(backend, "commits") == 1)
        #expect(try Self.jobs(backend).count == 1)
    }

    /// `save` keeps an earlier answer as a JSON sidecar (seed 002's ticket here), redacted as reports are; a download
    /// past `max_bytes` fails the file and writes nothing, not even the sidecar.
    @Test(arguments: [false, true])
    func saveWritesSidecarsWholeOrNotAtAll(capped: Bool) throws {
        let backend = try Self.backend()
        defer { backend.stop() }
        let folder = try TemporaryFolder("save-sidecar")
        defer { folder.remove() }
        try copySample("good/photo.jpg", to: folder.path + "/in/van.jpg")
        try folder.file(
            "sidecar.yml",
            """
            version: 1
            name: sidecar
            stages:
              - request: { url: "${API}/upload-url", json: { file_extension: jpg }, as: ticket }
              - save:
                  to: "{{dir.name}}-results"
                  files:
                    "{{file.stem}}.ticket.json": { json: "{{ticket}}" }
                    "state/{{file.stem}}.txt": { url: "${API}/_state" }
                  max_bytes: \(capped ? "10" : "1MiB")
            """)
        let result = try Self.run(["run", "sidecar.yml", "in"], in: folder, ["API": backend.base])
        let sidecar = folder.path + "/in-results/van.ticket.json"
        if capped {
            #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
            #expect(result.stdout.contains("save.max_bytes: GET "), "\(result.stdout)")
            #expect(result.stdout.contains("gave more than max_bytes 10 B; nothing was written"), "\(result.stdout)")
            #expect(!FileManager.default.fileExists(atPath: sidecar))
        } else {
            #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
            let text = try String(contentsOfFile: sidecar, encoding: .utf8)
            #expect(text.contains("\"image_key\": \"uploads/"), "\(text)")
            #expect(text.contains("X-Amz-Signature=REDACTED"), "\(text)")
            #expect(FileManager.default.fileExists(atPath: folder.path + "/in-results/state/van.txt"))
        }
    }

    static func holdJobs(_ backend: FixtureBackend, _ hold: Bool) throws {
        var request = HTTPRequest(
            method: "POST", url: backend.base + "/_jobs", body: .bytes(Array(#"{"hold": \#(hold)}"#.utf8)))
        request.headers = [("Content-Type", "application/json")]
        guard case .success(let response) = HTTPClient.shared.perform(request), response.status == 200 else {
            throw FixtureError(message: "POST /_jobs failed")
        }
    }
}
