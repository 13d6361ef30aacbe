import Foundation
import Testing

@testable import IngestConfig
@testable import IngestCore
@testable import IngestNetwork
@testable import IngestStages
@testable import IngestTemplates
@testable import IngestTestSupport

/// Seed 004 (crowd-geotag against SeaweedFS), the CI preset (preflight) and the template, `when` and lookup pieces
/// those pipelines lean on.
extension SeedPipelinesAudioGeo {
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
            ("when: {}", "'when' needs 'extensions', 'paths' or 'enabled'"), ("when: { extension: [m4a] }", "unknown option"),
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
