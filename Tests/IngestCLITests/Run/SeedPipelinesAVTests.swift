import Foundation
import Testing

@testable import IngestConfig
@testable import IngestCore
@testable import IngestNetwork
@testable import IngestRun
@testable import IngestStages
@testable import IngestTestSupport

/// The ready-made pipelines of seeds 000, 001 and 002 (`pipelines/*.yml`), run as a user runs them: the `ingest`
/// binary, the committed file, endpoints from the environment variables the file documents, pointed at the fixture
/// backend (Tests/Fixtures/backend.py). Assertions are about what the server received: each good file exactly once,
/// byte for byte what the tool meant to send, with the right Content-Type, every callback once with the ticket's
/// values, and nothing for files that failed validation. Each pipeline also has a fault run (5xx, 429 with
/// Retry-After, an expired signed URL) that must still end with every good file delivered once.
@Suite(.serialized) struct SeedPipelinesAV {
    let ingest = TestPaths.ingest

    static func pipeline(_ name: String) -> String { TestPaths.root + "/pipelines/" + name }
    static let samples = TestPaths.root + "/Samples"
    /// The .mov samples that are good videos (Samples/good), and the bad ones that must fail validation.
    static let goodMovies = ["located-udta.mov", "located.mov", "plain.mov", "portrait.mov"]
    static let badMovies = ["empty.mov", "photo-named.mov", "playlist.mov", "truncated.mov"]

    /// Runs `ingest run` with the committed pipeline `name` on `inputs`, in `folder` (so the journal and work files
    /// stay there), writing a JSON Lines report; returns the result and the report objects by path.
    func run(
        _ name: String, _ inputs: [String], in folder: TemporaryFolder, environment: [String: String]
    ) throws -> (CommandResult, [String: [String: Any]]) {
        let (result, objects) = try runIngestWithReport(
            Self.pipeline(name), inputs, in: folder.path, environment: environmentWithoutProxies(environment))
        return (result, Dictionary(objects.map { ($0["path"] as? String ?? "", $0) }, uniquingKeysWith: { a, _ in a }))
    }

    /// The fixture backend handing out presigned URLs of the real S3 server (SeaweedFS), in a bucket of its own:
    /// S3 checks each PUT's signature (Content-Type included where the ticket names one) and expiry, and stores it;
    /// the fixture counts the PUTs and injects the faults on the way.
    static func backend(faults: String = "[]") throws -> FixtureBackend {
        try FixtureBackend(
            faults: faults, s3: try SeaweedFS.shared(), bucket: "seeds-\(UUID().uuidString.prefix(8).lowercased())")
    }

    /// What S3 itself holds in the backend's bucket, read back by curl: each key's SHA-256 and Content-Type. It must
    /// be exactly what the fixture saw arrive (so the fixture's counts speak for S3).
    @discardableResult
    func expectS3HoldsWhatArrived(_ backend: FixtureBackend, in folder: TemporaryFolder) throws -> [String: String] {
        let s3 = try SeaweedFS.shared()
        let bucket = try #require(backend.bucket)
        let listing = try s3.curl(["\(s3.endpoint)/\(bucket)?list-type=2"])
        try #require(listing.status == 200, "\(listing.body)")
        let keys = listing.body.components(separatedBy: "<Key>").dropFirst().compactMap {
            $0.components(separatedBy: "</Key>").first
        }
        let arrived = try backend.objects()
        #expect(Set(keys) == Set(arrived.keys), "S3 holds \(keys.sorted()), the fixture saw \(arrived.keys.sorted())")
        var hashes: [String: String] = [:]
        for key in keys {
            let body = folder.path + "/s3-object"
            let headers = folder.path + "/s3-headers"
            let read = try s3.curl(["-D", headers, "-o", body, "\(s3.endpoint)/\(bucket)/\(key)"])
            try #require(read.status == 200, "GET \(key): \(read.status)")
            let headerText = try String(contentsOfFile: headers, encoding: .utf8)
            let contentType = headerText.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-type:") }
                .map { $0.dropFirst("content-type:".count).trimmingCharacters(in: .whitespaces) }
            hashes[key] = try sha256sum(body)
            #expect(hashes[key] == arrived[key]?["sha256"] as? String, "\(key)")
            #expect(contentType == arrived[key]?["content_type"] as? String, "\(key)")
        }
        return hashes
    }

    func rules(_ report: [String: Any]?) -> [String] {
        ((report?["failures"] as? [[String: Any]]) ?? []).compactMap { $0["rule"] as? String }
    }

    func facts(_ report: [String: Any]?) -> [String: Any] { report?["facts"] as? [String: Any] ?? [:] }

    /// Every JSON body the fixture received at `path`, in order.
    func bodies(_ backend: FixtureBackend, _ path: String) throws -> [[String: Any]] {
        ((try backend.state()["json"] as? [String: Any])?[path] as? [[String: Any]]) ?? []
    }

    func ffmpeg(_ arguments: [String]) throws {
        let made = try runTool("ffmpeg", ["-nostdin", "-hide_banner", "-loglevel", "error", "-y"] + arguments)
        try #require(made.status == 0, "ffmpeg \(arguments): \(made.stderr)")
    }

    /// A short H.264 + AAC QuickTime movie.
    @discardableResult
    func makeMovie(_ path: String, seconds: Int = 1) throws -> String {
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try ffmpeg([
            "-f", "lavfi", "-i", "testsrc=duration=\(seconds):size=160x120:rate=15", "-f", "lavfi", "-i",
            "sine=duration=\(seconds)", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", path,
        ])
        return path
    }

    /// Movies that must fail the hockey pipelines' validation, beside one good one: an audio-only .mov (no video
    /// stream) and a real movie padded (sparsely) past 100 MB. Returns the folder.
    func makeGeneratedMovies(in folder: TemporaryFolder) throws -> String {
        let generated = try folder.folder("generated")
        try makeMovie(generated + "/rink.mov")
        try ffmpeg(["-f", "lavfi", "-i", "sine=duration=1", "-c:a", "aac", "-f", "mov", generated + "/audio-only.mov"])
        try FileManager.default.copyItem(atPath: Self.samples + "/good/plain.mov", toPath: generated + "/big.mov")
        let handle = try #require(FileHandle(forWritingAtPath: generated + "/big.mov"))
        try handle.truncate(atOffset: 100_000_001)
        try handle.close()
        return generated
    }

    /// Checks the report and the server after a hockey run over Samples/ and the generated movies: the good
    /// movies passed and arrived once each, byte-identical, with `contentType`; the one over 100 MB was fitted under
    /// the limit and arrived as the fitted file; the bad ones failed and sent nothing. Returns the passed reports by
    /// file name.
    func expectHockeyDelivery(
        _ reports: [String: [String: Any]], generated: String, backend: FixtureBackend, contentType: String,
        folder: TemporaryFolder
    ) throws -> [String: [String: Any]] {
        let good = Self.goodMovies.map { Self.samples + "/good/" + $0 } + [generated + "/rink.mov"]
        let bad =
            Self.badMovies.map { Self.samples + "/bad/" + $0 } + [
                generated + "/audio-only.mov"
            ]
        let big = generated + "/big.mov"
        // Only .mov files are taken: the photos and the .m4a in Samples/ are not in the report at all.
        #expect(Set(reports.keys) == Set(good + bad + [big]), "\(reports.keys.sorted())")
        for path in good {
            #expect(reports[path]?["status"] as? String == "passed", "\(path): \(reports[path] ?? [:])")
        }
        for path in bad { #expect(reports[path]?["status"] as? String == "failed", "\(path)") }
        // Padded past 100 MB: fitted instead of rejected (`video: { fit }`), encoded under the limit and sent.
        #expect(reports[big]?["status"] as? String == "passed", "\(reports[big] ?? [:])")
        let fit = (facts(reports[big] ?? [:])["video"] as? [String: Any])?["fit"] as? [String: Any]
        #expect(fit?["action"] as? String == "encoded", "\(fit ?? [:])")
        #expect((fit?["bytes"] as? Int ?? .max) <= 100_000_000)
        #expect(rules(reports[generated + "/audio-only.mov"]).contains("require"))

        try expectS3HoldsWhatArrived(backend, in: folder)
        let objects = try backend.objects()
        #expect(objects.count == good.count + 1, "\(objects.keys.sorted())")
        var passed: [String: [String: Any]] = [:]
        for path in good + [big] {
            let report = try #require(reports[path])
            let ticket = facts(report)["ticket"] as? [String: Any] ?? [:]
            let storagePath = try #require(
                (ticket["upload_info"] as? [String: Any])?["storage_path"] as? String ?? ticket["storage_path"]
                    as? String)
            let stored = try #require(objects[storagePath], "\(storagePath) not stored")
            #expect(stored["count"] as? Int == 1, "\(storagePath) stored \(stored["count"] ?? 0) times")
            // The good movies fit as they are and are passed through untouched; the big one is its fitted file.
            #expect((stored["sha256"] as? String == (try sha256sum(path))) == (path != big), "\(path)")
            #expect(stored["content_type"] as? String == contentType)
            passed[(path as NSString).lastPathComponent] = report
        }
        return passed
    }

    // MARK: - Seed 000: hockey-video-signed-put.yml

    /// Seed 000's Firestore and analysis worker are the fixture's; the feedback goes to the test's folder (the inputs
    /// include Samples/, which must stay as committed).
    static func firestoreEnvironment(_ backend: FixtureBackend, _ folder: TemporaryFolder) -> [String: String] {
        [
            "FIRESTORE_URL": backend.base, "FIREBASE_PROJECT": "puck-buddy", "FIREBASE_TOKEN": "id-token",
            "PUCKBUDDY_POLL_INTERVAL": "0.1s", "PUCKBUDDY_POLL_MAX_INTERVAL": "0.2s",
            "PUCKBUDDY_FEEDBACK_DIR": folder.path + "/feedback",
        ]
    }

    @Test func hockeySignedPutDeliversEveryGoodMovieOnce() throws {
        let backend = try Self.backend()
        let folder = try TemporaryFolder("seed000")
        defer { folder.remove() }
        let generated = try makeGeneratedMovies(in: folder)
        let (result, reports) = try run(
            "hockey-video-signed-put.yml", [Self.samples, generated], in: folder,
            environment: Self.firestoreEnvironment(backend, folder).merging(
                ["PUCKBUDDY_BACKEND": backend.base + "/api", "PUCKBUDDY_USER_ID": "uid-42"]) { $1 })
        #expect(result.status == 1, "bad samples fail: \(result.stdout)\(result.stderr)")
        let passed = try expectHockeyDelivery(
            reports, generated: generated, backend: backend, contentType: "video/quicktime", folder: folder)

        // One ticket per good movie, asked with the guide's body {user_id, filename}; the object is named after it.
        let tickets = try bodies(backend, "/api/upload-url")
        #expect(tickets.count == passed.count)
        #expect(tickets.allSatisfy { $0["user_id"] as? String == "uid-42" && $0.count == 2 })
        #expect(Set(tickets.compactMap { $0["filename"] as? String }) == Set(passed.keys))
        for (name, report) in passed {
            #expect((facts(report)["ticket"] as? [String: Any])?["storage_path"] as? String == "users/uid-42/\(name)")
        }
        #expect(try backend.counts("callbacks").isEmpty)
        // Each delivered movie's job ran and its feedback was saved (in PUCKBUDDY_FEEDBACK_DIR: Samples/ stays as is).
        for name in passed.keys {
            let stem = (name as NSString).deletingPathExtension
            #expect(FileManager.default.fileExists(atPath: folder.path + "/feedback/\(stem).coach.txt"), "\(name)")
        }
        // The report keeps the ticket without the URL's signature.
        let text = String(data: try JSONSerialization.data(withJSONObject: Array(reports.values)), encoding: .utf8)!
        #expect(text.contains("X-Amz-Signature=REDACTED"))
        #expect(text.range(of: "X-Amz-Signature=[0-9a-f]", options: .regularExpression) == nil)
    }

    @Test func hockeySignedPutSurvivesServerErrorsRateLimitAndExpiredURL() throws {
        let faults = """
            [{"method": "POST", "path": "/api/upload-url", "action": "status", "status": 500, "times": 1},
             {"method": "POST", "path": "/api/upload-url", "action": "status", "status": 429, "retry_after": "1", "times": 1},
             {"method": "POST", "path": "/api/upload-url", "action": "expired_ticket", "times": 1},
             {"method": "PUT", "action": "status", "status": 503, "times": 1}]
            """
        let backend = try Self.backend(faults: faults)
        let folder = try TemporaryFolder("seed000-faults")
        defer { folder.remove() }
        let movies = try (1...3).map { try makeMovie(folder.path + "/in/clip\($0).mov", seconds: $0) }
        let (result, reports) = try run(
            "hockey-video-signed-put.yml", [folder.path + "/in"], in: folder,
            environment: Self.firestoreEnvironment(backend, folder).merging(
                ["PUCKBUDDY_BACKEND": backend.base + "/api", "PUCKBUDDY_USER_ID": "uid-7"]) { $1 })
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)\(reports)")
        #expect(reports.values.allSatisfy { $0["status"] as? String == "passed" })
        let statuses = try backend.requests().map { "\($0[0]) \($0[1]) \($0[2])" }
        #expect(statuses.filter { $0 == "POST /api/upload-url 500" }.count == 1)
        #expect(statuses.filter { $0 == "POST /api/upload-url 429" }.count == 1)
        #expect(statuses.filter { $0.hasPrefix("PUT") && $0.hasSuffix(" 403") }.count == 1, "\(statuses)")
        #expect(statuses.filter { $0.hasPrefix("PUT") && $0.hasSuffix(" 503") }.count == 1)
        // Three tickets for three movies, plus the one renewed after its URL had expired.
        #expect(try backend.counts("tickets") == ["/api/upload-url": 4])
        try expectS3HoldsWhatArrived(backend, in: folder)
        let objects = try backend.objects()
        #expect(objects.count == 3)
        for movie in movies {
            let stored = try #require(objects["users/uid-7/" + (movie as NSString).lastPathComponent])
            #expect(stored["count"] as? Int == 1)
            #expect(stored["sha256"] as? String == (try sha256sum(movie)))
            #expect(stored["content_type"] as? String == "video/quicktime")
        }
    }

    @Test func hockeySignedPutNamesTheMissingVariable() throws {
        let folder = try TemporaryFolder("seed000-env")
        defer { folder.remove() }
        let (result, reports) = try run(
            "hockey-video-signed-put.yml", [Self.samples], in: folder, environment: ["PUCKBUDDY_USER_ID": "u"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("'PUCKBUDDY_BACKEND' is not set: the backend base URL, ending in /api"))
        #expect(reports.isEmpty)
    }

    // MARK: - Seed 001: hockey-video-analyze.yml

    @Test func hockeyAnalyzeUploadsThenAnalysesEachGoodMovieOnce() throws {
        let backend = try Self.backend()
        let folder = try TemporaryFolder("seed001")
        defer { folder.remove() }
        let generated = try makeGeneratedMovies(in: folder)
        let environment = [
            "PUCKBUDDY_API": backend.base, "PUCKBUDDY_USER_ID": "uid-9", "PUCKBUDDY_AGE_GROUP": "13-16",
        ]
        let (result, reports) = try run(
            "hockey-video-analyze.yml", [Self.samples, generated], in: folder, environment: environment)
        #expect(result.status == 1, "bad samples fail: \(result.stdout)\(result.stderr)")
        let passed = try expectHockeyDelivery(
            reports, generated: generated, backend: backend, contentType: "video/mov", folder: folder)

        let tickets = try bodies(backend, "/api/upload-url")
        #expect(tickets.count == passed.count)
        #expect(
            tickets.allSatisfy {
                $0["user_id"] as? String == "uid-9" && $0["content_type"] as? String == "video/mov" && $0.count == 2
            })
        // One analysis per delivered movie, naming its storage path, the user and the age group.
        let analyses = try bodies(backend, "/api/analyze-video")
        #expect(analyses.count == passed.count)
        #expect(
            analyses.allSatisfy {
                $0["user_id"] as? String == "uid-9" && $0["age_group"] as? String == "13-16" && $0.count == 3
            })
        #expect(Set(analyses.compactMap { $0["storage_path"] as? String }) == Set(try backend.objects().keys))
        for report in passed.values {
            // The analysis is in each file's report: the chosen fields, and the whole answer.
            let fields = try #require(facts(report)["report"] as? [String: Any])
            #expect(fields["data_summary"] as? String == "2 shots detected")
            #expect(fields["shots_detected"] as? Int == 2)
            #expect(fields["video_duration"] as? Double == 12.5)
            let analysis = (facts(report)["analysis"] as? [String: Any])?["analysis"] as? [String: Any]
            #expect(analysis?["shots_detected"] as? Int == 2)
        }
        // The table (here rebuilt from the journal) prints the analysis on each file's line.
        let table = try runCommand(
            ingest, ["report", "--format", "table"], environment: environmentWithoutProxies(),
            directory: folder.path)
        let line = try #require(table.stdout.split(separator: "\n").first { $0.contains("/good/plain.mov") })
        #expect(
            line.hasSuffix("data_summary=\"2 shots detected\" shots_detected=2 video_duration=12.5"), "\(table.stdout)")

        // Running again sends nothing more: the journal has the good movies as done (the bad ones are looked at again).
        let (again, againReports) = try run(
            "hockey-video-analyze.yml", [Self.samples, generated], in: folder, environment: environment)
        #expect(again.status == 1)
        for name in passed.keys {
            let path = Self.goodMovies.contains(name) ? Self.samples + "/good/" + name : generated + "/" + name
            #expect(againReports[path]?["status"] as? String == "skipped", "\(path)")
        }
        #expect(try bodies(backend, "/api/upload-url").count == passed.count)
        #expect(try bodies(backend, "/api/analyze-video").count == passed.count)
        #expect(try backend.objects().values.allSatisfy { $0["count"] as? Int == 1 })
    }

    @Test func hockeyAnalyzeWaitsOutRateLimitsAndRenewsExpiredURL() throws {
        let faults = """
            [{"method": "POST", "path": "/api/upload-url", "action": "status", "status": 503, "times": 1},
             {"method": "POST", "path": "/api/upload-url", "action": "expired_ticket", "times": 1},
             {"method": "PUT", "action": "status", "status": 500, "times": 1},
             {"method": "POST", "path": "/api/analyze-video", "action": "status", "status": 429, "retry_after": "1",
              "body": {"detail": "You've reached the hourly analysis limit (10 videos/hour)"}, "times": 2}]
            """
        let backend = try Self.backend(faults: faults)
        let folder = try TemporaryFolder("seed001-faults")
        defer { folder.remove() }
        let movies = try (1...3).map { try makeMovie(folder.path + "/in/shift\($0).mov") }
        let (result, reports) = try run(
            "hockey-video-analyze.yml", [folder.path + "/in"], in: folder,
            environment: ["PUCKBUDDY_API": backend.base, "PUCKBUDDY_USER_ID": "uid-3"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)\(reports)")
        #expect(reports.count == 3)
        #expect(reports.values.allSatisfy { $0["status"] as? String == "passed" })
        let statuses = try backend.requests().map { "\($0[0]) \($0[1]) \($0[2])" }
        #expect(statuses.filter { $0 == "POST /api/analyze-video 429" }.count == 2)
        #expect(statuses.filter { $0.hasPrefix("PUT") && $0.hasSuffix(" 403") }.count == 1, "\(statuses)")
        #expect(try backend.counts("tickets") == ["/api/upload-url": 4])
        try expectS3HoldsWhatArrived(backend, in: folder)
        let objects = try backend.objects()
        #expect(objects.count == 3)
        #expect(objects.values.allSatisfy { $0["count"] as? Int == 1 && $0["content_type"] as? String == "video/mov" })
        #expect(Set(objects.values.compactMap { $0["sha256"] as? String }) == Set(try movies.map(sha256sum)))
        // Each delivered movie analysed once (the 429 answers are not analyses), with the default age group.
        let analyses = try bodies(backend, "/api/analyze-video")
        #expect(analyses.count == 3)
        #expect(Set(analyses.compactMap { $0["storage_path"] as? String }) == Set(objects.keys))
        #expect(analyses.allSatisfy { $0["age_group"] as? String == "17+" })
        #expect(try backend.counts("callbacks") == ["/api/analyze-video": 3])
    }

    /// `PUCKBUDDY_FIT=false` opts out of fitting: a movie over 100 MB is then rejected by the size rule after the
    /// video stage, as the guide does, and nothing is sent.
    @Test func hockeyPipelinesRejectOversizeMoviesWhenFitIsOff() throws {
        let backend = try Self.backend()
        let folder = try TemporaryFolder("seed-fit-off")
        defer { folder.remove() }
        let generated = try makeGeneratedMovies(in: folder)
        for (pipeline, environment) in [
            ("hockey-video-analyze.yml", ["PUCKBUDDY_API": backend.base, "PUCKBUDDY_USER_ID": "uid-1"]),
            (
                "hockey-video-signed-put.yml",
                Self.firestoreEnvironment(backend, folder).merging(
                    ["PUCKBUDDY_BACKEND": backend.base + "/api", "PUCKBUDDY_USER_ID": "uid-1"]) { $1 }
            ),
        ] {
            let (result, reports) = try run(
                pipeline, [generated + "/big.mov"], in: folder,
                environment: environment.merging(["PUCKBUDDY_FIT": "false"]) { $1 })
            #expect(result.status == 1, "\(pipeline): \(result.stdout)\(result.stderr)")
            #expect(rules(reports[generated + "/big.mov"]).contains("max_bytes"), "\(pipeline): \(reports)")
        }
        #expect(try backend.objects().isEmpty)
    }

    /// The limits seed 001 states, as the file sets them: an analysis may take 600 s with no byte flowing (the
    /// stall limit would otherwise end it after 60 s), the client keeps to 20 tickets and 10 analyses an hour, and a
    /// 429 is waited out for longer than the hour-long window instead of failing the file.
    @Test func hockeyAnalyzeKeepsTheSeedsTimeoutAndRates() throws {
        let pipeline = try Pipeline.load(
            path: Self.pipeline("hockey-video-analyze.yml"),
            environment: ["PUCKBUDDY_API": "https://api.example.test", "PUCKBUDDY_USER_ID": "u"])
        let requests = pipeline.stages.compactMap { $0.stage as? RequestStage }
        try #require(requests.count == 2)
        let (ticket, analyze) = (requests[0].options, requests[1].options)
        #expect(ticket.network.rate == Rate(count: 20, window: 3600))
        #expect(analyze.network.rate == Rate(count: 10, window: 3600))
        #expect(analyze.timeout.seconds == 600 && analyze.network.lowSpeedTime.seconds >= 600)
        for options in [ticket, analyze] {
            #expect(options.network.maxElapsed.seconds > 3600 && options.network.maxAttempts >= 5)
        }
    }

    /// `report:` on a request stage: the table prints the chosen fields as `name=value` (text with spaces quoted, a
    /// field the answer lacked as null), and a path with an empty part is refused when the file loads.
    @Test func reportFieldsPrintOnTheTableLineAndBadPathsAreRefused() throws {
        let facts: JSONObject = [
            "report": .object(["data_summary": "2 shots detected", "shots_detected": 2, "coach": .null, "ok": true])
        ]
        #expect(
            TableReportWriter.summary(of: facts)
                == #"data_summary="2 shots detected" shots_detected=2 coach=null ok=true"#)
        let yaml = """
            version: 1
            name: t
            stages:
              - request: { url: "https://api.example.test/analyze", report: [analysis..shots_detected] }

            """
        #expect {
            try Pipeline.parse(yaml: yaml, environment: [:])
        } throws: { error in
            "\(error)".contains("report: 'analysis..shots_detected' is not a dotted field path")
        }
    }
}
