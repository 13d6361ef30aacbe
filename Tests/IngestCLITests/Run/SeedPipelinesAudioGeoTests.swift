import Foundation
import Testing

@testable import IngestCore
@testable import IngestTestSupport

/// The ready-made pipelines for seeds 003 and 004 and the CI preset, run as committed (`pipelines/*.yml`) by the
/// `ingest` binary against real servers: the fixture backend (Tests/Fixtures/backend.py, seed 003's API and an S3
/// presigned-POST target) and SeaweedFS (a real S3 server, optionally behind the fixture as a fault-injecting
/// proxy). Assertions are about what the servers hold, checked with independent tools (sha256sum, ffprobe, curl).
@Suite(.serialized) struct SeedPipelinesAudioGeo {
    let ingest = TestPaths.ingest

    static func pipeline(_ name: String) -> String { TestPaths.root + "/pipelines/\(name).yml" }

    /// `ingest run pipelines/NAME.yml INPUTS` in `folder` (so the journal and work folder stay there), with a JSON
    /// Lines report; returns the result and the report's objects.
    func run(
        _ name: String, _ inputs: [String], in folder: TemporaryFolder, environment: [String: String]
    ) throws -> (CommandResult, [[String: Any]]) {
        var clean = environmentWithoutProxies(environment)
        for name in ["PETS_MANIFEST", "AWS_PROFILE", "AWS_DEFAULT_REGION"] where environment[name] == nil {
            clean[name] = nil
        }
        return try runIngestWithReport(Self.pipeline(name), inputs, in: folder.path, environment: clean)
    }

    /// Report objects by the file's name.
    func byName(_ reports: [[String: Any]]) -> [String: [String: Any]] {
        var out: [String: [String: Any]] = [:]
        for report in reports { out[((report["path"] as? String ?? "") as NSString).lastPathComponent] = report }
        return out
    }

    func rules(_ report: [String: Any]?) -> [String] {
        ((report?["failures"] as? [[String: Any]]) ?? []).map { "\($0["stage"] ?? "").\($0["rule"] ?? "")" }
    }

    func size(_ path: String) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
    }

    /// Duration by ffprobe (the oracle), in seconds.
    func ffprobeDuration(_ path: String) throws -> Double {
        let result = try runTool(
            "ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", path])
        return try #require(Double(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)), "\(result.stderr)")
    }

    /// A `seconds`-long tone encoded with `codec` (aac, alac …) at `path`.
    func makeAudio(_ path: String, seconds: Double = 1, codec: String = "aac") throws {
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let made = try runTool(
            "ffmpeg",
            [
                "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                "sine=frequency=330:duration=\(seconds):sample_rate=44100", "-ac", "1", "-c:a", codec, path,
            ])
        try #require(made.status == 0, "\(made.stderr)")
    }

    static func uuid() -> String { UUID().uuidString.lowercased() }

    // MARK: - vet-audio (seed 003)

    func vetEnvironment(_ backend: FixtureBackend, token: String, manifest: String? = nil) -> [String: String] {
        var environment = ["HELPPET_API": backend.base, "HELPPET_TOKEN": token]
        environment["PETS_MANIFEST"] = manifest
        return environment
    }

    /// For each passed recording: the object the backend stored for its visit is the file byte for byte, with
    /// Content-Type audio/m4a, stored once, and the visit's complete callback carried its size and duration as
    /// numbers measured from that file.
    func expectDelivered(
        _ reports: [String: [String: Any]], files: [String: String], backend: FixtureBackend
    ) throws {
        let state = try backend.state()
        let objects = (state["objects"] as? [String: [String: Any]]) ?? [:]
        let lastJSON = (state["last_json"] as? [String: Any]) ?? [:]
        for (name, path) in files {
            let report = try #require(reports[name], "no report for \(name)")
            #expect(report["status"] as? String == "passed", "\(name): \(rules(report))")
            let facts = try #require(report["facts"] as? [String: Any])
            let ticket = try #require(facts["ticket"] as? [String: Any])
            let key = try #require(ticket["s3_key"] as? String)
            let visit = try #require(ticket["visit_id"] as? String)
            let object = try #require(objects[key], "nothing stored at \(key)")
            #expect(object["sha256"] as? String == (try sha256sum(path)), "\(name)")
            #expect(object["count"] as? Int == 1, "\(name) stored \(object["count"] ?? 0) times")
            #expect(object["content_type"] as? String == "audio/m4a")
            let complete = try #require(
                lastJSON["/api/v1/visit-transcripts/audio/upload/complete/\(visit)"] as? [String: Any])
            #expect(complete["file_size_bytes"] as? Int == (try size(path)))
            let duration = try #require(complete["duration_seconds"] as? Double, "duration is not a number")
            #expect(abs(duration - (try ffprobeDuration(path))) < 0.05, "\(name): \(duration)")
            let device = try #require(complete["device_metadata"] as? [String: Any])
            #expect(device["codec"] as? String == "aac")
            #expect(device["sample_rate"] as? Int == 44100)
            #expect(device["original_filename"] as? String == name)
        }
    }

    @Test func vetAudioDeliversEachGoodRecordingOnce() throws {
        let backend = try FixtureBackend(bearer: "vet-jwt-1")
        let folder = try TemporaryFolder("seed003")
        defer { folder.remove() }
        let (petA, petB, petC, petD) = (Self.uuid(), Self.uuid(), Self.uuid(), Self.uuid())
        let voice = folder.path + "/in/\(petA)/voice.m4a"
        try copySample("good/voice.m4a", to: voice)
        let checkup = folder.path + "/in/\(petB)/checkup.m4a"
        try makeAudio(checkup, seconds: 2.5)
        // Rules broken locally: nothing may reach the backend for these.
        try makeAudio(folder.path + "/in/rex/wrong-folder.m4a")  // pet id is not a UUID
        try makeAudio(folder.path + "/in/\(petC)/lossless.m4a", codec: "alac")  // not AAC
        try folder.file("in/\(petD)/empty.m4a", "")  // no duration, empty
        try folder.file("in/\(petA)/notes.txt", "not a recording")  // not taken at all
        let (result, list) = try run(
            "vet-audio", [folder.path + "/in"], in: folder, environment: vetEnvironment(backend, token: "vet-jwt-1"))
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        let reports = byName(list)
        #expect(reports.count == 5, "\(reports.keys.sorted())")
        try expectDelivered(reports, files: ["voice.m4a": voice, "checkup.m4a": checkup], backend: backend)
        #expect(rules(reports["wrong-folder.m4a"]) == ["lookup.patterns.pet_id"])
        let message = ((reports["wrong-folder.m4a"]?["failures"] as? [[String: Any]])?.first?["message"] as? String)
        #expect(message == "pet_id 'rex' ({{dir.name}}, from fallback) is not a UUID")
        #expect(rules(reports["lossless.m4a"]) == ["validate.audio_codecs"])
        #expect(rules(reports["empty.m4a"]).contains("validate.min_bytes"))
        #expect(try backend.objects().count == 2)
        #expect(try backend.counts("tickets") == ["/api/v1/visit-transcripts/audio/upload/initiate": 2])
        #expect(try backend.counts("callbacks") == ["/api/v1/visit-transcripts/audio/upload/complete": 2])
        // The ticket request: the pet's UUID, and the duration as a JSON number.
        let initiate = try #require(
            (try backend.state()["last_json"] as? [String: Any])?["/api/v1/visit-transcripts/audio/upload/initiate"]
                as? [String: Any])
        #expect([petA, petB].contains(initiate["pet_id"] as? String ?? ""))
        #expect(initiate["content_type"] as? String == "audio/m4a")
        #expect(initiate["estimated_duration_seconds"] is Double)
        // Tokens and signatures stay out of the report.
        let text = String(data: try JSONSerialization.data(withJSONObject: list), encoding: .utf8) ?? ""
        #expect(!text.contains("vet-jwt-1"))
        #expect(text.contains("\"x-amz-signature\":\"REDACTED\""))

        // A second recording of the same pet on the same day: the backend's 409 skips it, naming the visit.
        let again = folder.path + "/again/\(petA)/second.m4a"
        try makeAudio(again, seconds: 1.2)
        let (second, secondList) = try run(
            "vet-audio", [folder.path + "/again"], in: folder, environment: vetEnvironment(backend, token: "vet-jwt-1"))
        #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
        let skipped = try #require(secondList.first)
        #expect(skipped["status"] as? String == "skipped")
        let visitA = ((reports["voice.m4a"]?["facts"] as? [String: Any])?["ticket"] as? [String: Any])?["visit_id"]
        let reason = skipped["reason"] as? String ?? ""
        #expect(reason.hasPrefix("409 Conflict: Audio recording already exists for pet \(petA) today."), "\(reason)")
        #expect(reason.hasSuffix("Visit ID: \(visitA as? String ?? "?")"), "\(reason)")
        #expect(try backend.objects().count == 2)
    }

    @Test func vetAudioTakesPetIdsFromTheManifest() throws {
        let backend = try FixtureBackend(bearer: "t")
        let folder = try TemporaryFolder("seed003-manifest")
        defer { folder.remove() }
        let (petA, petB) = (Self.uuid(), Self.uuid())
        let first = folder.path + "/in/monday/fluffy.m4a"
        try makeAudio(first)
        let second = folder.path + "/in/monday/max, the dog.m4a"
        try makeAudio(second, seconds: 1.5)
        try makeAudio(folder.path + "/in/monday/stray.m4a")  // not in the manifest
        try makeAudio(folder.path + "/in/tuesday/bad-id.m4a")  // in it, with an id that is not a UUID
        let manifest = try folder.file(
            "pets.csv",
            "\u{FEFF}path,pet_id,note\r\nmonday/fluffy.m4a,\(petA),cat\r\n\"monday/max, the dog.m4a\",\(petB),\"a \"\"good\"\" dog\"\r\n"
                + "tuesday/bad-id.m4a,42,\r\n")
        let (result, list) = try run(
            "vet-audio", [folder.path + "/in"], in: folder,
            environment: vetEnvironment(backend, token: "t", manifest: manifest))
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        let reports = byName(list)
        try expectDelivered(reports, files: ["fluffy.m4a": first, "max, the dog.m4a": second], backend: backend)
        #expect(rules(reports["stray.m4a"]) == ["lookup.csv"])
        #expect(rules(reports["bad-id.m4a"]) == ["lookup.patterns.pet_id"])
        // The backend files each recording under its pet: the keys carry the manifest's ids, not folder names.
        let keys = try backend.objects().keys.sorted()
        #expect(keys.count == 2)
        #expect(Set(keys.map { $0.split(separator: "/").dropLast().last.map(String.init) ?? "" }) == [petA, petB])
        let pet = (reports["max, the dog.m4a"]?["facts"] as? [String: Any])?["pet"] as? [String: Any]
        #expect(pet?["note"] as? String == "a \"good\" dog")
    }

    /// The backend hands out presigned POSTs for a real S3 bucket (SeaweedFS checks the policy and its SigV4
    /// signature); what lands there is each recording byte for byte, typed audio/m4a, under the ticket's key.
    @Test func vetAudioLandsInARealS3Bucket() throws {
        let server = try SeaweedFS.shared()
        let bucket = "vet-\(UUID().uuidString.prefix(8).lowercased())"
        try server.createBucket(bucket)
        let backend = try FixtureBackend(bearer: "t", s3Post: (server, bucket))
        let folder = try TemporaryFolder("seed003-s3")
        defer { folder.remove() }
        var files: [String: String] = ["voice.m4a": folder.path + "/in/\(Self.uuid())/voice.m4a"]
        try copySample("good/voice.m4a", to: files["voice.m4a"]!)
        files["long-visit.m4a"] = folder.path + "/in/\(Self.uuid())/long-visit.m4a"
        try makeAudio(files["long-visit.m4a"]!, seconds: 30)
        try makeAudio(folder.path + "/in/\(Self.uuid())/lossless.m4a", codec: "alac")
        let (result, list) = try run(
            "vet-audio", [folder.path + "/in"], in: folder, environment: vetEnvironment(backend, token: "t"))
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)\n\(server.logTail())")
        let reports = byName(list)
        var keys: [String] = []
        for (name, path) in files {
            #expect(reports[name]?["status"] as? String == "passed", "\(name): \(rules(reports[name]))")
            let ticket = (reports[name]?["facts"] as? [String: Any])?["ticket"] as? [String: Any]
            let key = try #require(ticket?["s3_key"] as? String)
            #expect(ticket?["upload_url"] as? String == "\(server.endpoint)/\(bucket)")
            keys.append(key)
            let url = "\(server.endpoint)/\(bucket)/\(key)"
            let head = try server.curl(["-s", "-I", url])
            #expect(head.body.lowercased().contains("content-type: audio/m4a"), "\(head.body)")
            let copy = folder.path + "/readback-\(name)"
            #expect(try server.curl(["-o", copy, url]).status == 200)
            #expect(try sha256sum(copy) == (try sha256sum(path)), "\(name)")
            let visit = try #require(ticket?["visit_id"] as? String)
            let complete =
                (try backend.state()["last_json"] as? [String: Any])?[
                    "/api/v1/visit-transcripts/audio/upload/complete/\(visit)"] as? [String: Any]
            #expect(complete?["file_size_bytes"] as? Int == (try size(path)))
        }
        #expect(rules(reports["lossless.m4a"]) == ["validate.audio_codecs"])
        #expect(try listKeys(server, bucket: bucket) == keys.sorted())
        #expect(try backend.counts("tickets") == ["/api/v1/visit-transcripts/audio/upload/initiate": 2])
        #expect(try backend.counts("callbacks") == ["/api/v1/visit-transcripts/audio/upload/complete": 2])
    }

    /// `ingest validate` runs vet-audio's local stages only: the pet-id check included, the backend never called.
    @Test func vetAudioLocalRulesRunOffline() throws {
        let backend = try FixtureBackend(bearer: "t")
        let folder = try TemporaryFolder("seed003-offline")
        defer { folder.remove() }
        try copySample("good/voice.m4a", to: folder.path + "/in/\(Self.uuid())/good.m4a")
        try copySample("good/voice.m4a", to: folder.path + "/in/rex/misfiled.m4a")
        let result = try runCommand(
            ingest, ["validate", Self.pipeline("vet-audio"), "in/"],
            environment: environmentWithoutProxies(vetEnvironment(backend, token: "t")), directory: folder.path)
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        #expect(
            result.stdout.contains("lookup.patterns.pet_id: pet_id 'rex' ({{dir.name}}, from fallback) is not a UUID"))
        #expect(result.stdout.hasSuffix("1 passed, 1 failed, 0 skipped\n"), "\(result.stdout)")
        #expect(try backend.requests().isEmpty)
    }

    @Test func vetAudioRidesOutServerFaults() throws {
        // Every call fails once or twice in some way; each recording must still arrive exactly once.
        let faults = """
            [{"method": "POST", "path": "/api/v1/visit-transcripts/audio/upload/initiate", "action": "status", "status": 500, "times": 1},
             {"method": "POST", "path": "/api/v1/visit-transcripts/audio/upload/initiate", "action": "status", "status": 429, "retry_after": "1", "times": 1},
             {"method": "POST", "path": "/api/v1/visit-transcripts/audio/upload/initiate", "action": "expired_ticket", "times": 1},
             {"method": "POST", "path": "/s3post/", "action": "status", "status": 503, "times": 1},
             {"method": "POST", "path": "/s3post/", "action": "status", "status": 429, "retry_after": "1", "times": 1},
             {"method": "POST", "path": "/api/v1/visit-transcripts/audio/upload/complete/", "action": "status", "status": 502, "times": 1}]
            """
        let backend = try FixtureBackend(faults: faults, bearer: "t")
        let folder = try TemporaryFolder("seed003-faults")
        defer { folder.remove() }
        var files: [String: String] = [:]
        for (index, seconds) in [1.0, 1.5, 2.0].enumerated() {
            let path = folder.path + "/in/\(Self.uuid())/visit-\(index).m4a"
            try makeAudio(path, seconds: seconds)
            files["visit-\(index).m4a"] = path
        }
        let (result, list) = try run(
            "vet-audio", [folder.path + "/in"], in: folder, environment: vetEnvironment(backend, token: "t"))
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)\(list)")
        try expectDelivered(byName(list), files: files, backend: backend)
        let statuses = try backend.requests().map { "\($0[0]) \($0[2])" }
        for expected in ["POST 500", "POST 429", "POST 503", "POST 502"] {
            #expect(statuses.filter { $0 == expected }.count == (expected == "POST 429" ? 2 : 1), "\(statuses)")
        }
        // The expired ticket's policy was seen to be past its expiration before a byte was sent (no 403 came back)
        // and renewed once: one ticket more than files, one object and one callback per file.
        #expect(!statuses.contains("POST 403"), "\(statuses)")
        #expect(try backend.counts("tickets") == ["/api/v1/visit-transcripts/audio/upload/initiate": 4])
        #expect(try backend.counts("callbacks") == ["/api/v1/visit-transcripts/audio/upload/complete": 3])
        #expect(try backend.objects().count == 3)
    }

    /// A batch stopped by a failing upload and run again after its ticket expired: the journal's ticket is reused,
    /// S3 refuses its expired policy (403), and a fresh one is asked for (it used to fail on every later run).
    @Test func vetAudioResumedFileRenewsAnExpiredTicket() throws {
        let backend = try FixtureBackend(
            faults: #"[{"method": "POST", "path": "/s3post/", "action": "status", "status": 500, "times": 3}]"#,
            bearer: "t", urlTTL: 60)
        let folder = try TemporaryFolder("seed003-resume")
        defer { folder.remove() }
        let path = folder.path + "/in/\(Self.uuid())/visit.m4a"
        try copySample("good/voice.m4a", to: path)
        let environment = vetEnvironment(backend, token: "t")
        let (first, firstList) = try run("vet-audio", [folder.path + "/in"], in: folder, environment: environment)
        #expect(first.status == 1)
        #expect(rules(firstList.first) == ["upload.status"], "\(firstList)")
        try backend.advanceClock(by: 61)  // the backend's clock moves past the ticket's policy expiration (60 s)
        let (second, secondList) = try run("vet-audio", [folder.path + "/in"], in: folder, environment: environment)
        #expect(second.status == 0, "\(second.stdout)\(secondList)")
        let refused = try backend.requests().filter { "\($0[0]) \($0[2])" == "POST 403" }
        #expect(refused.count == 1, "the journal's expired ticket should have been refused once: \(refused)")
        try expectDelivered(byName(secondList), files: ["visit.m4a": path], backend: backend)
        #expect(try backend.counts("tickets") == ["/api/v1/visit-transcripts/audio/upload/initiate": 2])
        #expect(try backend.counts("callbacks") == ["/api/v1/visit-transcripts/audio/upload/complete": 1])
    }
}
