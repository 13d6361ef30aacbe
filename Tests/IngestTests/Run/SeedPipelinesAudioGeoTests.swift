import Foundation
import Testing

@testable import Ingest

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
        let report = folder.path + "/report-\(UUID().uuidString.prefix(6)).jsonl"
        var clean = environmentWithoutProxies(environment)
        for name in ["PETS_MANIFEST", "AWS_PROFILE", "AWS_DEFAULT_REGION"] where environment[name] == nil {
            clean[name] = nil
        }
        let result = try runCommand(
            ingest, ["run", Self.pipeline(name)] + inputs + ["--report", report, "-q"], environment: clean,
            directory: folder.path)
        let lines = (try? String(contentsOfFile: report, encoding: .utf8))?.split(separator: "\n") ?? []
        let objects = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        return (result, objects)
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

    func copySample(_ sample: String, to path: String) throws {
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: TestPaths.root + "/Samples/" + sample, toPath: path)
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
    /// its policy is seen to have expired, and a fresh one is asked for (it used to fail on every later run).
    @Test func vetAudioResumedFileRenewsAnExpiredTicket() throws {
        let backend = try FixtureBackend(
            faults: #"[{"method": "POST", "path": "/s3post/", "action": "status", "status": 500, "times": 3}]"#,
            bearer: "t", urlTTL: 2)
        let folder = try TemporaryFolder("seed003-resume")
        defer { folder.remove() }
        let path = folder.path + "/in/\(Self.uuid())/visit.m4a"
        try copySample("good/voice.m4a", to: path)
        let environment = vetEnvironment(backend, token: "t")
        let (first, firstList) = try run("vet-audio", [folder.path + "/in"], in: folder, environment: environment)
        #expect(first.status == 1)
        #expect(rules(firstList.first) == ["upload.status"], "\(firstList)")
        usleep(2_500_000)  // past the ticket's policy expiration
        let (second, secondList) = try run("vet-audio", [folder.path + "/in"], in: folder, environment: environment)
        #expect(second.status == 0, "\(second.stdout)\(secondList)")
        try expectDelivered(byName(secondList), files: ["visit.m4a": path], backend: backend)
        #expect(try backend.counts("tickets") == ["/api/v1/visit-transcripts/audio/upload/initiate": 2])
        #expect(try backend.counts("callbacks") == ["/api/v1/visit-transcripts/audio/upload/complete": 1])
    }

    // MARK: - crowd-geotag (seed 004)

    func crowdEnvironment(endpoint: String, bucket: String, server: SeaweedFS) -> [String: String] {
        [
            "S3_ENDPOINT": endpoint, "S3_BUCKET": bucket, "AWS_ACCESS_KEY_ID": server.accessKey,
            "AWS_SECRET_ACCESS_KEY": server.secretKey, "AWS_REGION": server.region, "AWS_SESSION_TOKEN": "",
        ]
    }

    /// Keys under `prefix` in the bucket (ListObjectsV2, read by curl's own SigV4).
    func listKeys(_ server: SeaweedFS, bucket: String, prefix: String = "") throws -> [String] {
        let listing = try server.curl(["\(server.endpoint)/\(bucket)?list-type=2&prefix=\(prefix)"])
        #expect(listing.status == 200, "\(listing.body)")
        let regex = try NSRegularExpression(pattern: "<Key>([^<]*)</Key>")
        let text = listing.body
        return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap {
            Range($0.range(at: 1), in: text).map { String(text[$0]) }
        }.sorted()
    }

    /// The object at `key` is `path` byte for byte, with the given Content-Type and location metadata.
    func expectStored(
        _ path: String, key: String, contentType: String, geohash: String, latitude: String, longitude: String,
        server: SeaweedFS, bucket: String, folder: TemporaryFolder
    ) throws {
        let url = "\(server.endpoint)/\(bucket)/\(key)"
        let head = try server.curl(["-s", "-I", url])
        #expect(head.status == 200, "HEAD \(key)")
        // Whole header lines: a coordinate must be exactly as given, not merely start with it.
        let headers = Set(
            head.body.lowercased().split(whereSeparator: \.isNewline).map {
                $0.trimmingCharacters(in: .whitespaces)
            })
        #expect(headers.contains("content-type: \(contentType)"), "\(key): \(head.body)")
        #expect(headers.contains("x-amz-meta-geohash: \(geohash)"), "\(key): \(head.body)")
        #expect(headers.contains("x-amz-meta-latitude: \(latitude)"), "\(key): \(head.body)")
        #expect(headers.contains("x-amz-meta-longitude: \(longitude)"), "\(key): \(head.body)")
        let downloaded = folder.path + "/get-\(UUID().uuidString.prefix(6))"
        let get = try server.curl(["-o", downloaded, url])
        #expect(get.status == 200)
        #expect(try sha256sum(downloaded) == (try sha256sum(path)), "\(key) differs from \(path)")
    }

    /// A JPEG located in San Francisco (EXIF GPS by exiftool), named with an upper-case extension as cameras do.
    func makeLocatedPhoto(_ path: String) throws {
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let made = try runCommand(
            "/bin/sh",
            [
                "-c",
                "ffmpeg -nostdin -v error -y -f lavfi -i testsrc=size=240x160 -frames:v 1 -f image2 -c:v mjpeg '\(path)'"
                    + " && exiftool -q -overwrite_original -GPSLatitude=37.7749 -GPSLatitudeRef=N"
                    + " -GPSLongitude=122.4194 -GPSLongitudeRef=W '\(path)'",
            ])
        try #require(made.status == 0, "\(made.stderr)")
    }

    @Test func crowdGeotagStoresLocatedMediaUnderTheirGeohash() throws {
        let server = try SeaweedFS.shared()
        let bucket = "crowd-\(UUID().uuidString.prefix(8).lowercased())"
        try server.createBucket(bucket)
        let folder = try TemporaryFolder("seed004")
        defer { folder.remove() }
        let input = folder.path + "/media"
        for sample in ["located.mov", "located-udta.mov", "photo.jpg", "photo.heic", "plain.mov", "graphic.png"] {
            try copySample("good/" + sample, to: input + "/" + sample)
        }
        try copySample("good/voice.m4a", to: input + "/voice.m4a")  // not a photo or video: not taken
        try copySample("bad/empty.mov", to: input + "/bad/empty.mov")
        try copySample("bad/photo-named.mov", to: input + "/bad/photo-named.mov")
        let golden = input + "/trip/GOLDEN-GATE.JPG"
        try makeLocatedPhoto(golden)
        // Over the 8 MiB part size: it goes by multipart upload (lossless H.264, so it stays large).
        let long = input + "/trip/bridge.mp4"
        let made = try runTool(
            "ffmpeg",
            [
                "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30:duration=20",
                "-c:v", "libx264", "-preset", "ultrafast", "-qp", "0", "-metadata", "location=+37.7749-122.4194/",
                long,
            ])
        try #require(made.status == 0, "\(made.stderr)")
        try #require(try size(long) > 9 << 20, "the clip must need more than one part")

        let (result, list) = try run(
            "crowd-geotag", [input], in: folder,
            environment: crowdEnvironment(endpoint: server.endpoint, bucket: bucket, server: server))
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        let reports = byName(list)
        #expect(reports.count == 10, "\(reports.keys.sorted())")
        for name in ["plain.mov", "graphic.png"] {
            #expect(reports[name]?["status"] as? String == "skipped", "\(name)")
            #expect(reports[name]?["reason"] as? String == "no location metadata (geohash on_missing: skip)")
        }
        #expect(rules(reports["empty.mov"]) == ["validate.min_bytes"])
        #expect(rules(reports["photo-named.mov"]) == ["validate.content"])

        // Stockholm (59.3293, 18.0686) is u6sce0; San Francisco (37.7749, -122.4194) is 9q8yyk.
        let stockholm = [
            "located.mov": "video/quicktime", "located-udta.mov": "video/quicktime",
            "photo.jpg": "image/jpeg", "photo.heic": "image/heic",
        ]
        var expectedKeys: [String] = []
        for (name, type) in stockholm {
            let path = input + "/" + name
            #expect(reports[name]?["status"] as? String == "passed", "\(name): \(rules(reports[name]))")
            let key = "geo/u6sce/\(try sha256sum(path)).\((name as NSString).pathExtension)"
            expectedKeys.append(key)
            try expectStored(
                path, key: key, contentType: type, geohash: "u6sce0", latitude: "59.3293", longitude: "18.0686",
                server: server, bucket: bucket, folder: folder)
        }
        let goldenKey = "geo/9q8yy/\(try sha256sum(golden)).jpg"
        expectedKeys.append(goldenKey)
        try expectStored(
            golden, key: goldenKey, contentType: "image/jpeg", geohash: "9q8yyk", latitude: "37.7749",
            longitude: "-122.4194", server: server, bucket: bucket, folder: folder)
        let longKey = "geo/9q8yy/\(try sha256sum(long)).mp4"
        expectedKeys.append(longKey)
        try expectStored(
            long, key: longKey, contentType: "video/mp4", geohash: "9q8yyk", latitude: "37.7749",
            longitude: "-122.4194", server: server, bucket: bucket, folder: folder)
        let longStored = (reports["bridge.mp4"]?["facts"] as? [String: Any])?["stored"] as? [String: Any]
        #expect(longStored?["parts"] as? Int == 2, "\(longStored ?? [:])")
        // Exactly these objects: nothing for skipped or failed files, nothing twice.
        #expect(try listKeys(server, bucket: bucket) == expectedKeys.sorted())
        let stored = (reports["GOLDEN-GATE.JPG"]?["facts"] as? [String: Any])?["stored"] as? [String: Any]
        #expect(stored?["key"] as? String == goldenKey)
    }

    @Test func crowdGeotagRidesOutS3Faults() throws {
        let server = try SeaweedFS.shared()
        let bucket = "crowd-\(UUID().uuidString.prefix(8).lowercased())"
        try server.createBucket(bucket)
        // The fixture stands in front of SeaweedFS: each PUT of an object meets a 500, a 429 with Retry-After or a
        // dropped connection once before it reaches the real server, which still checks every signature.
        let faults = """
            [{"method": "PUT", "path": "/\(bucket)/geo/", "action": "status", "status": 500, "times": 1},
             {"method": "PUT", "path": "/\(bucket)/geo/", "action": "status", "status": 429, "retry_after": "1", "times": 1},
             {"method": "PUT", "path": "/\(bucket)/geo/", "action": "reset", "after_bytes": 20000, "times": 1}]
            """
        let proxy = try FixtureBackend(faults: faults, upstream: server.endpoint)
        let folder = try TemporaryFolder("seed004-faults")
        defer { folder.remove() }
        let input = folder.path + "/media"
        for sample in ["located.mov", "photo.jpg", "photo.heic"] {
            try copySample("good/" + sample, to: input + "/" + sample)
        }
        let (result, list) = try run(
            "crowd-geotag", [input], in: folder,
            environment: crowdEnvironment(endpoint: proxy.base, bucket: bucket, server: server))
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)\(list)")
        var expectedKeys: [String] = []
        for (name, type) in ["located.mov": "video/quicktime", "photo.jpg": "image/jpeg", "photo.heic": "image/heic"] {
            let path = input + "/" + name
            let key = "geo/u6sce/\(try sha256sum(path)).\((name as NSString).pathExtension)"
            expectedKeys.append(key)
            try expectStored(
                path, key: key, contentType: type, geohash: "u6sce0", latitude: "59.3293", longitude: "18.0686",
                server: server, bucket: bucket, folder: folder)
        }
        #expect(try listKeys(server, bucket: bucket) == expectedKeys.sorted())
        // Every fault was met, and each object was stored by exactly one successful PUT.
        let puts = try proxy.requests().filter { $0[0] as? String == "PUT" }.map {
            ($0[1] as? String ?? "", "\($0[2])")
        }
        #expect(puts.map(\.1).sorted() == ["200", "200", "200", "429", "500", "reset"], "\(puts)")
        for key in expectedKeys {
            #expect(puts.filter { $0.0 == "/\(bucket)/\(key)" && $0.1 == "200" }.count == 1, "\(key): \(puts)")
        }
    }

    // MARK: - preflight (CI preset)

    @Test func preflightAppliesEachKindsRulesAndWritesJUnit() throws {
        let folder = try TemporaryFolder("preflight")
        defer { folder.remove() }
        let media = folder.path + "/media"
        for sample in ["voice.m4a", "photo.jpg", "graphic.png", "located.mov"] {
            try copySample("good/" + sample, to: media + "/" + sample)
        }
        try makeAudio(media + "/lossless.m4a", codec: "alac")  // vet-audio takes AAC only
        // A .mov holding only audio: the movie rules want a video stream.
        let audioOnly = media + "/audio-only.mov"
        let made = try runTool(
            "ffmpeg",
            ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=duration=1", "-c:a", "aac", "-f", "mov", audioOnly])
        try #require(made.status == 0, "\(made.stderr)")
        try copySample("bad/truncated.mov", to: media + "/truncated.mov")
        let report = folder.path + "/report.xml"
        // The README's CI snippet, as written there.
        let result = try runCommand(
            ingest,
            ["validate", Self.pipeline("preflight"), "media/", "--report-format", "junit", "--report", report, "-q"],
            directory: folder.path)
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        let xml = try String(contentsOfFile: report, encoding: .utf8)
        // Python's XML parser reads it (a CI system's would too): each testcase's name and failure types.
        let parsed = try runTool(
            "python3",
            [
                "-c",
                "import sys, xml.etree.ElementTree as E\nfor c in E.parse(sys.argv[1]).iter('testcase'):\n"
                    + "    print(c.get('name') + '\\t' + ','.join(f.get('type') for f in c.iter('failure')))",
                report,
            ])
        try #require(parsed.status == 0, "\(parsed.stderr)\n\(xml)")
        var cases: [String: [String]] = [:]
        for line in parsed.stdout.split(separator: "\n") {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            cases[(fields[0] as NSString).lastPathComponent] =
                fields.count > 1 ? fields[1].split(separator: ",").map(String.init) : []
        }
        func failures(_ name: String) -> [String] { cases[name] ?? ["(no testcase)"] }
        #expect(cases.count == 7, "\(xml)")
        // Photos pass though they have no duration and no audio: the recording and movie rules are not theirs.
        for name in ["voice.m4a", "photo.jpg", "graphic.png", "located.mov"] {
            #expect(failures(name).isEmpty, "\(name): \(failures(name))")
        }
        #expect(failures("lossless.m4a") == ["validate.audio_codecs"], "\(xml)")
        #expect(failures("audio-only.mov") == ["validate.require"], "\(xml)")
        #expect(failures("truncated.mov") == ["validate.corrupt"], "\(xml)")
        #expect(xml.contains("audio stream #0 is alac, which is not allowed"), "\(xml)")
        #expect(xml.contains("the file has no video stream"), "\(xml)")
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/.ingest/journal.sqlite"))
    }

    // MARK: - The features these pipelines use

    func scope(_ item: Item, facts: JSONObject = [:]) -> TemplateScope {
        for (key, value) in facts.pairs { item.facts[key] = value }
        return TemplateScope(
            item: item, context: StageContext(settings: RunSettings(environment: [:])), stage: "test")
    }

    @Test func templateFiltersCutAndFoldText() throws {
        let item = Item(path: "/m/a/IMG_1.JPG", relativePath: "a/IMG_1.JPG", size: 1)
        let scope = scope(item, facts: ["geohash": "u6sce0"])
        #expect(try Template("geo/{{geohash | first:5}}/x.{{ file.ext|lower }}").render(scope) == "geo/u6sce/x.jpg")
        #expect(try Template("{{geohash|last:2}}{{file.stem | upper | first:3}}").render(scope) == "e0IMG")
        #expect(try Template("{{geohash | first:5}}").variables == ["geohash"])
        // A filtered value is text even where a lone variable would keep its type.
        #expect(try TemplateValue.text(Template("{{file.size | first:9}}")).render(scope) == .string("1"))
        for bad in ["{{geohash | first}}", "{{geohash | first:0}}", "{{geohash | slice:2}}", "{{geohash | lower:2}}"] {
            #expect(throws: TemplateSyntaxError.self, "\(bad)") { try Template(bad) }
        }
    }

    @Test func whenLimitsAStageToSomeFiles() throws {
        let yaml = """
            version: 1
            name: when
            stages:
              - validate: { when: { extensions: [M4A] }, audio_codecs: [aac] }
              - geohash: { when: { paths: ["trips/**"] }, on_missing: skip }
            """
        let pipeline = try Pipeline.parse(yaml: yaml, environment: [:])
        let audio = Item(path: "/x/a.m4a", relativePath: "a.m4a", size: 1)
        let photo = Item(path: "/x/trips/b.jpg", relativePath: "trips/b.jpg", size: 1)
        #expect(pipeline.stages[0].condition?.matches(audio) == true)
        #expect(pipeline.stages[0].condition?.matches(photo) == false)
        #expect(pipeline.stages[1].condition?.matches(audio) == false)
        #expect(pipeline.stages[1].condition?.matches(photo) == true)
        for (options, message) in [
            ("when: {}", "'when' needs 'extensions' or 'paths'"), ("when: { extension: [m4a] }", "unknown option"),
            ("when: { extensions: [] }", "empty list"),
        ] {
            let text = "version: 1\nname: w\nstages:\n  - validate: { \(options), max_bytes: 1MB }\n"
            #expect(throws: PipelineFileErrors.self) { try Pipeline.parse(yaml: text, environment: [:]) }
            let errors = Pipeline.lint(yaml: text, environment: [:]).map(\.message).joined()
            #expect(errors.contains(message), "\(options): \(errors)")
        }
    }

    @Test func geohashCanSkipFilesWithoutALocation() throws {
        let plain = TestPaths.root + "/Samples/good/plain.mov"
        let item = Item(path: plain, relativePath: "plain.mov", size: Int64(try size(plain)))
        let context = StageContext(settings: RunSettings(environment: [:]))
        var options = GeohashStage.Options()
        options.onMissing = .skip
        #expect(try GeohashStage(options: options).run(item, context: context) != .proceed)
        options.onMissing = .pass
        #expect(try GeohashStage(options: options).run(item, context: context) == .proceed)
        let conflicting = "version: 1\nname: g\nstages:\n  - geohash: { required: true, on_missing: skip }\n"
        #expect(throws: PipelineFileErrors.self) { try Pipeline.parse(yaml: conflicting, environment: [:]) }
    }

    @Test func lookupRefusesABadManifestWhenThePipelineLoads() throws {
        let folder = try TemporaryFolder("manifest")
        defer { folder.remove() }
        func loadError(_ csv: String, options: String = "") throws -> String {
            let path = try folder.file("m-\(UUID().uuidString.prefix(4)).csv", csv)
            let yaml = """
                version: 1
                name: m
                stages:
                  - lookup: { csv: "\(path)", patterns: { pet_id: uuid }\(options) }
                """
            do {
                _ = try Pipeline.parse(yaml: yaml, environment: [:])
                return "loaded"
            } catch let errors as PipelineFileErrors {
                return errors.errors.map(\.message).joined(separator: "; ")
            }
        }
        #expect(try loadError("path,pet_id\na.m4a,1\nb.m4a\n").contains("line 3: 1 fields, but the header has 2"))
        #expect(try loadError("path,pet_id\na.m4a,1\n./a.m4a,2\n").contains("line 3: 'a.m4a' is already on line 2"))
        #expect(try loadError("path,pet_id\n\"a.m4a,1\n").contains("a quoted field is not closed"))
        #expect(try loadError("path,pet\na.m4a,1\n").contains("has no column 'pet_id' (patterns names it)"))
        #expect(try loadError("file,pet_id\na.m4a,1\n", options: ", key_column: path").contains("no column 'path'"))
        #expect(try loadError("").contains("is empty"))
        #expect(try loadError("path,pet_id\r\n\r\na.m4a,1\r\n") == "loaded")
        let unchecked = """
            version: 1
            name: m
            stages:
              - lookup: { fallback: { pet: "{{dir.name}}" }, patterns: { pet_id: uuid } }
            """
        let uncheckedErrors = Pipeline.lint(yaml: unchecked, environment: [:]).map(\.message).joined()
        #expect(uncheckedErrors.contains("patterns names 'pet_id', which fallback does not give"), "\(uncheckedErrors)")
        let missing = "version: 1\nname: m\nstages:\n  - lookup: { csv: /nonexistent/pets.csv }\n"
        #expect(throws: PipelineFileErrors.self) { try Pipeline.parse(yaml: missing, environment: [:]) }
        // Unset, `${PETS_MANIFEST:-}` means no manifest: the fallback is used.
        let optional = """
            version: 1
            name: m
            stages:
              - lookup: { csv: "${PETS_MANIFEST:-}", fallback: { pet_id: "{{dir.name}}" }, patterns: { pet_id: uuid } }
            """
        let pipeline = try Pipeline.parse(yaml: optional, environment: [:])
        let pet = Self.uuid()
        let item = Item(path: "/r/\(pet)/a.m4a", relativePath: "\(pet)/a.m4a", size: 1)
        _ = try pipeline.stages[0].stage.run(
            item, context: StageContext(settings: RunSettings(environment: [:]), resultName: "pet"))
        #expect(item.facts["pet"] == .object(["pet_id": .string(pet)]))
    }
}
