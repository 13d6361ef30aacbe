import Foundation
import Testing

@testable import IngestCore
@testable import IngestJournal
@testable import IngestTestSupport

/// The request and upload stages end to end: the `ingest` binary runs pipelines against the fixture backend
/// (Tests/Fixtures/backend.py), and assertions are about what the server received.
@Suite(.serialized) struct UploadPipelineTests {
    let ingest = TestPaths.ingest

    /// Runs `ingest run` on `inputs` with `pipeline` (YAML text), writing a JSON Lines report; returns the result and
    /// the report's objects.
    func run(
        _ pipeline: String, _ inputs: [String], in folder: TemporaryFolder, environment: [String: String] = [:]
    ) throws -> (CommandResult, [[String: Any]]) {
        let file = try folder.file("pipeline-\(UUID().uuidString.prefix(6)).yml", pipeline)
        return try runIngestWithReport(
            file, inputs, in: folder.path, environment: environmentWithoutProxies(environment))
    }

    func messages(_ report: [String: Any]) -> [String] {
        ((report["failures"] as? [[String: Any]]) ?? []).compactMap { $0["message"] as? String }
    }

    /// Seed 001: ticket, streamed PUT to the signed URL, analysis callback with the storage path (a 409, the
    /// fixture's answer to a repeated callback, counts as done, as in pipelines/hockey-video-analyze.yml).
    static func hockeyPipeline(_ base: String, extra: String = "") -> String {
        """
        version: 1
        name: hockey
        concurrency: 2
        stages:
          - request:
              url: \(base)/api/upload-url
              json: { user_id: "{{dir.name}}", content_type: video/mov }
              backoff: 50ms
              as: ticket
          - upload: { method: put, url: "{{ticket.upload_info.upload_url}}", content_type: video/mov, backoff: 50ms\(extra) }
          - request:
              url: \(base)/api/analyze-video
              json: { user_id: "{{dir.name}}", storage_path: "{{ticket.upload_info.storage_path}}", age_group: "17+" }
              on_conflict: done
              as: analysis

        """
    }

    @Test func putThenCallbackStoresEachFileOnce() throws {
        let backend = try FixtureBackend()
        let folder = try TemporaryFolder("put")
        defer { folder.remove() }
        let first = try writeRandomFile(folder.path + "/in/alice/one.mov", size: 3_000_000, seed: 1)
        let second = try writeRandomFile(folder.path + "/in/bob/two.mov", size: 700_001, seed: 2)
        let (result, reports) = try run(Self.hockeyPipeline(backend.base), [folder.path + "/in"], in: folder)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(reports.map { $0["status"] as? String } == ["passed", "passed"])

        let objects = try backend.objects()
        #expect(objects.count == 2)
        let bySize = Dictionary(uniqueKeysWithValues: objects.values.map { ($0["size"] as? Int ?? -1, $0) })
        #expect(bySize[3_000_000]?["sha256"] as? String == (try sha256sum(first)))
        #expect(bySize[700_001]?["sha256"] as? String == (try sha256sum(second)))
        #expect(objects.values.allSatisfy { $0["count"] as? Int == 1 && $0["content_type"] as? String == "video/mov" })
        #expect(try backend.counts("callbacks") == ["/api/analyze-video": 2])
        #expect(try backend.counts("tickets") == ["/api/upload-url": 2])
        // The callback's answer is saved under `as:`; the signed URL's signature is not in the report.
        let facts = try #require(reports.first?["facts"] as? [String: Any])
        #expect((facts["analysis"] as? [String: Any])?["success"] as? Bool == true)
        let reportText = String(data: try JSONSerialization.data(withJSONObject: reports), encoding: .utf8) ?? ""
        #expect(reportText.contains("X-Amz-Signature=REDACTED"))
        #expect(!reportText.contains(#"X-Amz-Signature=[0-9a-f]"#))
    }

    /// Seed 003: Bearer-authenticated initiate with typed JSON values, S3 presigned POST checked strictly by the
    /// fixture (fields first and in order, file last, CRLFs), then complete with the file's size and duration.
    static func vetPipeline(_ base: String, initiateExtra: String = "") -> String {
        """
        version: 1
        name: vet-audio
        stages:
          - request:
              url: \(base)/api/v1/visit-transcripts/audio/upload/initiate
              headers: { Authorization: "Bearer ${HELPPET_TOKEN}" }
              json: { pet_id: "{{dir.name}}", filename: "{{file.name}}", content_type: audio/m4a,
                      estimated_duration_seconds: "{{probe.duration}}" }
              on_conflict: skip
              backoff: 50ms
              as: ticket\(initiateExtra)
          - upload: { method: s3-post, url: "{{ticket.upload_url}}", fields: "{{ticket.upload_fields}}", expect: [204], as: stored }
          - request:
              url: \(base)/api/v1/visit-transcripts/audio/upload/complete/{{ticket.visit_id}}
              headers: { Authorization: "Bearer ${HELPPET_TOKEN}" }
              json: { file_size_bytes: "{{file.size}}", duration_seconds: "{{probe.duration}}",
                      device_metadata: { app: ingest, sample_rate: 44100 } }
              as: visit

        """
    }

    func makeAudio(_ path: String, seconds: Int = 1) throws {
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let made = try runTool(
            "ffmpeg",
            [
                "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "sine=duration=\(seconds)", "-ac", "1",
                "-c:a", "aac", path,
            ])
        #expect(made.status == 0, "\(made.stderr)")
    }

    @Test func vetAudioTypedJSONAndS3PostShape() throws {
        let backend = try FixtureBackend(bearer: "vet-token-123")
        let folder = try TemporaryFolder("vet")
        defer { folder.remove() }
        try makeAudio(folder.path + "/in/pet-a/visit.m4a")
        let (result, reports) = try run(
            Self.vetPipeline(backend.base), [folder.path + "/in"], in: folder,
            environment: ["HELPPET_TOKEN": "vet-token-123"])
        #expect(result.status == 0, "\(result.stdout)\(reports)")
        let state = try backend.state()
        let lastJSON = try #require(state["last_json"] as? [String: Any])
        // "{{probe.duration}}" and "{{file.size}}" went out as JSON numbers; the nested object as an object.
        let initiate = try #require(lastJSON["/api/v1/visit-transcripts/audio/upload/initiate"] as? [String: Any])
        #expect(initiate["estimated_duration_seconds"] is Double || initiate["estimated_duration_seconds"] is Int)
        #expect(initiate["pet_id"] as? String == "pet-a")
        let complete = try #require(
            lastJSON.first { $0.key.contains("/complete/") }?.value as? [String: Any])
        let size = try FileManager.default.attributesOfItem(atPath: folder.path + "/in/pet-a/visit.m4a")[.size] as? Int
        #expect(complete["file_size_bytes"] as? Int == size)
        #expect((complete["device_metadata"] as? [String: Any])?["sample_rate"] as? Int == 44100)
        // The form: the ticket's fields in the ticket's order, then the file part named "file".
        let form = try #require(lastJSON["/s3post/helppetai-visit-recordings"] as? [String: Any])
        let names = (form["fields"] as? [[String]])?.map { $0[0] }
        #expect(
            names == [
                "key", "Content-Type", "policy", "x-amz-credential", "x-amz-algorithm", "x-amz-date", "x-amz-signature",
            ])
        #expect((form["file"] as? [String: Any])?["filename"] as? String == "visit.m4a")
        let objects = try backend.objects()
        #expect(objects.count == 1)
        #expect(objects.values.first?["sha256"] as? String == (try sha256sum(folder.path + "/in/pet-a/visit.m4a")))
        #expect(try backend.counts("callbacks") == ["/api/v1/visit-transcripts/audio/upload/complete": 1])
        // Reports carry the ticket without its signature.
        let ticket = try #require((reports.first?["facts"] as? [String: Any])?["ticket"] as? [String: Any])
        #expect((ticket["upload_fields"] as? [String: Any])?["x-amz-signature"] as? String == "REDACTED")
    }

    @Test func conflictSkipsWithTheServersMessage() throws {
        let backend = try FixtureBackend(bearer: "t")
        let folder = try TemporaryFolder("conflict")
        defer { folder.remove() }
        try makeAudio(folder.path + "/in/pet-b/a.m4a")
        try FileManager.default.copyItem(
            atPath: folder.path + "/in/pet-b/a.m4a", toPath: folder.path + "/in/pet-b/b.m4a")
        let (result, reports) = try run(
            Self.vetPipeline(backend.base), [folder.path + "/in"], in: folder, environment: ["HELPPET_TOKEN": "t"])
        #expect(result.status == 0, "\(reports)")
        // Both files start together: whichever initiates second is the duplicate.
        #expect(reports.compactMap { $0["status"] as? String }.sorted() == ["passed", "skipped"])
        let reason = reports.first { $0["status"] as? String == "skipped" }?["reason"] as? String ?? ""
        #expect(reason.hasPrefix("409 Conflict: Audio recording already exists for pet pet-b today. Visit ID: "))
        #expect(try backend.objects().count == 1)
    }

    @Test func policyViolationFailsBeforeAnyByteIsSent() throws {
        let backend = try FixtureBackend(bearer: "t")
        let folder = try TemporaryFolder("policy")
        defer { folder.remove() }
        // An empty file breaks the ticket's content-length-range [1, 100 MiB].
        try folder.file("in/pet-c/empty.m4a", "")
        let pipeline = Self.vetPipeline(backend.base).replacingOccurrences(
            of: "estimated_duration_seconds: \"{{probe.duration}}\"", with: "estimated_duration_seconds: 1")
        let (result, reports) = try run(
            pipeline, [folder.path + "/in"], in: folder, environment: ["HELPPET_TOKEN": "t"])
        #expect(result.status == 1)
        let failures = (reports.first?["failures"] as? [[String: Any]]) ?? []
        #expect(failures.first?["rule"] as? String == "policy.content-length-range")
        #expect(messages(reports[0]).first?.contains("file is 0 bytes") == true)
        #expect(try backend.requests().allSatisfy { ($0[1] as? String)?.hasPrefix("/s3post") == false })
    }

    @Test func retriesServerErrorsAndHonoursRetryAfter() throws {
        let faults = """
            [{"method": "POST", "path": "/api/upload-url", "action": "status", "status": 429, "retry_after": "1", "times": 1},
             {"method": "PUT", "path": "/signed/", "action": "status", "status": 500, "times": 1},
             {"method": "POST", "path": "/api/analyze-video", "action": "status", "status": 503, "times": 1}]
            """
        let backend = try FixtureBackend(faults: faults)
        let folder = try TemporaryFolder("retry")
        defer { folder.remove() }
        let path = try writeRandomFile(folder.path + "/in/carol/clip.mov", size: 1_500_000)
        let (result, reports) = try run(Self.hockeyPipeline(backend.base), [folder.path + "/in"], in: folder)
        #expect(result.status == 0, "\(reports)")
        let statuses = try backend.requests().map { "\($0[0]) \($0[2])" }
        #expect(statuses.filter { $0.hasPrefix("PUT") } == ["PUT 500", "PUT 200"])
        #expect(statuses.filter { $0 == "POST 429" }.count == 1)
        let objects = try backend.objects()
        #expect(objects.count == 1)
        #expect(objects.values.first?["count"] as? Int == 1)
        #expect(objects.values.first?["sha256"] as? String == (try sha256sum(path)))
        #expect(try backend.counts("callbacks") == ["/api/analyze-video": 1])
    }

    @Test func connectionResetMidBodyIsRetriedAndStoredOnce() throws {
        let backend = try FixtureBackend(
            faults: #"[{"method": "PUT", "path": "/signed/", "action": "reset", "after_bytes": 300000, "times": 2}]"#)
        let folder = try TemporaryFolder("reset")
        defer { folder.remove() }
        let path = try writeRandomFile(folder.path + "/in/dave/big.mov", size: 4_000_000)
        let (result, reports) = try run(Self.hockeyPipeline(backend.base), [folder.path + "/in"], in: folder)
        #expect(result.status == 0, "\(reports)")
        let puts = try backend.requests().filter { $0[0] as? String == "PUT" }.map { "\($0[2])" }
        #expect(puts == ["reset", "reset", "200"])
        let objects = try backend.objects()
        #expect(objects.count == 1)
        #expect(objects.values.first?["count"] as? Int == 1)
        #expect(objects.values.first?["sha256"] as? String == (try sha256sum(path)))
    }

    /// The SHA-256 the journal records is taken from the bytes as they are sent (hashed on a queue of its own, not on
    /// curl's thread): after two connections reset mid-body, and a rewind to byte 0 each time, it is exactly the
    /// file's, not a mix of the attempts.
    @Test func hashTakenWhileSendingMatchesTheFileAfterMidBodyResets() throws {
        let backend = try FixtureBackend(
            faults: #"[{"method": "PUT", "path": "/signed/", "action": "reset", "after_bytes": 1500000, "times": 2}]"#)
        let folder = try TemporaryFolder("reset-hash")
        defer { folder.remove() }
        let path = try writeRandomFile(folder.path + "/in/dave/big.mov", size: 9_000_001, seed: 7)
        let (result, reports) = try run(Self.hockeyPipeline(backend.base), [folder.path + "/in"], in: folder)
        #expect(result.status == 0, "\(reports)")
        let puts = try backend.requests().filter { $0[0] as? String == "PUT" }.map { "\($0[2])" }
        #expect(puts == ["reset", "reset", "200"])
        let journal = try SQLiteJournal(path: folder.path + "/.ingest/journal.sqlite", writer: false, create: false)
        let record = try #require(
            try journal.record(root: JournalRecord.canonicalRoot(folder.path + "/in"), relativePath: "dave/big.mov"))
        #expect(record.state == .done)
        #expect(record.sha256 == (try journalIdentity(path)))
    }

    /// With `--no-journal` the upload hashes nothing, yet a later `{{sha256}}` still renders the file's hash (read
    /// when the template asks for it).
    @Test func noJournalUploadStillRendersSha256ForALaterStage() throws {
        let backend = try FixtureBackend()
        let folder = try TemporaryFolder("nojournal-hash")
        defer { folder.remove() }
        let path = try writeRandomFile(folder.path + "/in/erin/clip.mov", size: 2_000_003, seed: 9)
        let pipeline = Self.hockeyPipeline(backend.base).replacingOccurrences(
            of: "age_group: \"17+\" }", with: "age_group: \"17+\", sha256: \"{{sha256}}\" }")
        let file = try folder.file("pipeline.yml", pipeline)
        let result = try runCommand(
            ingest, ["run", file, folder.path + "/in", "--no-journal", "-q"],
            environment: environmentWithoutProxies(), directory: folder.path)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let bodies =
            ((try backend.state()["json"] as? [String: Any])?["/api/analyze-video"] as? [[String: Any]]) ?? []
        #expect(bodies.map { $0["sha256"] as? String } == [try sha256sum(path)])
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/.ingest/journal.sqlite"))
    }

    @Test func resetOnEveryAttemptFailsWithCurlsText() throws {
        let backend = try FixtureBackend(
            faults: #"[{"method": "PUT", "path": "/signed/", "action": "reset", "after_bytes": 100000, "times": 9}]"#)
        let folder = try TemporaryFolder("reset-fail")
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/erin/big.mov", size: 2_000_000)
        let (result, reports) = try run(Self.hockeyPipeline(backend.base), [folder.path + "/in"], in: folder)
        #expect(result.status == 1)
        let message = messages(reports[0]).first ?? ""
        #expect(message.contains("(after 3 attempts)"), "\(message)")
        #expect(message.contains("PUT http://127.0.0.1:\(backend.port)/signed/"))
        #expect(message.contains("X-Amz-Signature=REDACTED"))
        #expect(try backend.objects().isEmpty)
        #expect(try backend.counts("callbacks").isEmpty)
    }

    @Test func expiredSignedURLIsRenewedOnce() throws {
        let backend = try FixtureBackend(
            faults: #"[{"method": "POST", "path": "/api/upload-url", "action": "expired_ticket", "times": 1}]"#)
        let folder = try TemporaryFolder("expired")
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/frank/clip.mov", size: 200_000)
        let (result, reports) = try run(Self.hockeyPipeline(backend.base), [folder.path + "/in"], in: folder)
        #expect(result.status == 0, "\(reports)")
        #expect(try backend.counts("tickets") == ["/api/upload-url": 2])
        let puts = try backend.requests().filter { $0[0] as? String == "PUT" }.map { "\($0[2])" }
        #expect(puts == ["403", "200"])
        #expect(try backend.objects().count == 1)
    }

    @Test func expiredPolicyIsRenewedBeforeSending() throws {
        let backend = try FixtureBackend(
            faults:
                #"[{"method": "POST", "path": "/api/v1/visit-transcripts/audio/upload/initiate", "action": "expired_ticket", "times": 1}]"#,
            bearer: "t")
        let folder = try TemporaryFolder("expired-post")
        defer { folder.remove() }
        try makeAudio(folder.path + "/in/pet-d/a.m4a")
        let (result, reports) = try run(
            Self.vetPipeline(backend.base), [folder.path + "/in"], in: folder, environment: ["HELPPET_TOKEN": "t"])
        #expect(result.status == 0, "\(reports)")
        #expect(try backend.counts("tickets") == ["/api/v1/visit-transcripts/audio/upload/initiate": 2])
        #expect(try backend.requests().filter { ($0[1] as? String)?.hasPrefix("/s3post") == true }.count == 1)
    }

    @Test func missingTicketFieldIsNamed() throws {
        let backend = try FixtureBackend()
        let folder = try TemporaryFolder("missing")
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/gina/clip.mov", size: 1000)
        let pipeline = Self.hockeyPipeline(backend.base).replacingOccurrences(
            of: "{{ticket.upload_info.upload_url}}", with: "{{ticket.upload_info.signed_url}}")
        let (result, reports) = try run(pipeline, [folder.path + "/in"], in: folder)
        #expect(result.status == 1)
        let message = messages(reports[0]).first ?? ""
        #expect(
            message.hasPrefix(
                "{{ticket.upload_info.signed_url}} has no value: 'ticket.upload_info' has no field 'signed_url'"))
        #expect(message.contains("upload_url, storage_path"))
        #expect(try backend.objects().isEmpty)
    }

    @Test func plainHTTPToARemoteHostIsRefused() throws {
        let folder = try TemporaryFolder("http")
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/h/clip.mov", size: 1000)
        let pipeline = """
            version: 1
            name: refused
            stages:
              - upload: { method: put, url: "http://uploads.example.com/{{file.name}}" }

            """
        let (result, reports) = try run(pipeline, [folder.path + "/in"], in: folder)
        #expect(result.status == 1)
        #expect(reports.first?["status"] as? String == "failed")
        let failure = (reports.first?["failures"] as? [[String: Any]])?.first
        #expect(failure?["rule"] as? String == "refused")
        #expect((failure?["message"] as? String)?.contains("plain http to uploads.example.com is refused") == true)
    }

    @Test func unreachableHostFailsThatFileAndTheBatchGoesOn() throws {
        let backend = try FixtureBackend()
        let folder = try TemporaryFolder("unreachable")
        defer { folder.remove() }
        let closedPort = try closedLoopbackPort()
        // Each file's folder names the port its ticket request goes to: one live, one closed.
        try writeRandomFile(folder.path + "/in/\(closedPort)/a.mov", size: 1000)
        try writeRandomFile(folder.path + "/in/\(backend.port)/b.mov", size: 1000)
        let pipeline = Self.hockeyPipeline("http://127.0.0.1:{{dir.name}}")
        let (result, reports) = try run(pipeline, [folder.path + "/in"], in: folder)
        #expect(result.status == 1)
        let byPath = Dictionary(uniqueKeysWithValues: reports.map { ($0["path"] as? String ?? "", $0) })
        let failed = try #require(byPath[folder.path + "/in/\(closedPort)/a.mov"])
        #expect(failed["status"] as? String == "failed")
        let message = messages(failed).first ?? ""
        #expect(message.contains("Failed to connect to 127.0.0.1 port \(closedPort)"), "\(message)")
        #expect(message.contains("(after 3 attempts)"))
        #expect(byPath[folder.path + "/in/\(backend.port)/b.mov"]?["status"] as? String == "passed")
    }

    @Test func rateLimitQueuesInsteadOfFailing() throws {
        let backend = try FixtureBackend()
        let folder = try TemporaryFolder("rate")
        defer { folder.remove() }
        for index in 0..<4 { try writeRandomFile(folder.path + "/in/u\(index)/c.mov", size: 1000, seed: UInt64(index)) }
        let pipeline = Self.hockeyPipeline(backend.base).replacingOccurrences(
            of: "      as: analysis", with: "      rate: 2/s\n      as: analysis")
        let (result, reports) = try run(pipeline, [folder.path + "/in"], in: folder)
        #expect(result.status == 0, "\(reports)")
        #expect(try backend.counts("callbacks") == ["/api/analyze-video": 4])
    }

    @Test func localCopyIsAtomicAndConfined() throws {
        let folder = try TemporaryFolder("local")
        defer { folder.remove() }
        let source = try writeRandomFile(folder.path + "/in/cam1/clip.mov", size: 600_000)
        let outside = try folder.folder("outside")
        _ = try folder.folder("dest")
        try FileManager.default.createSymbolicLink(atPath: folder.path + "/dest/escape", withDestinationPath: outside)
        let pipeline = """
            version: 1
            name: archive
            stages:
              - upload: { method: local, dir: dest, key: "{{date.yyyy}}/{{dir.name}}/{{file.stem}}-{{sha256}}.{{file.ext}}", as: copy }
              - upload: { method: local, dir: dest, key: "/../{{file.name}}" }

            """
        let (result, reports) = try run(pipeline, [folder.path + "/in"], in: folder)
        #expect(result.status == 1)
        let sha = try sha256sum(source)
        let year = String(
            Calendar(identifier: .gregorian).dateComponents(in: TimeZone(identifier: "UTC")!, from: Date()).year!)
        let copied = folder.path + "/dest/\(year)/cam1/clip-\(sha).mov"
        #expect(try sha256sum(copied) == sha)
        // No temporary file is left beside it.
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: folder.path + "/dest/\(year)/cam1") == [
                "clip-\(sha).mov"
            ])
        let failure = (reports.first?["failures"] as? [[String: Any]])?.first
        #expect(failure?["rule"] as? String == "key")
        #expect((failure?["message"] as? String)?.contains("'..'") == true)

        // A symlink inside the destination cannot lead a copy out of it.
        let escape = """
            version: 1
            name: escape
            stages:
              - upload: { method: local, dir: dest, key: "escape/{{file.name}}" }

            """
        let (escaped, escapeReports) = try run(escape, [folder.path + "/in"], in: folder)
        #expect(escaped.status == 1)
        #expect(messages(escapeReports[0]).first?.contains("leads outside") == true)
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside).isEmpty)
    }

    /// A port on 127.0.0.1 nobody listens on: bound, then closed.
    func closedLoopbackPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
