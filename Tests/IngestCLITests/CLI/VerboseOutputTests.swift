import Foundation
import Testing

@testable import IngestCore
@testable import IngestTestSupport

/// What a run shows as it goes, through the CLI: `-v`/`-vv` lines for each request attempt (secrets redacted),
/// `--log-format json`, the timings in the JSON Lines and JUnit reports, the closing summary line, the status line
/// redrawn after every result on a terminal, and `--version`.
@Suite(.serialized) struct VerboseOutputTests {
    static let token = "tok-9f8e7d6c5b4a"
    /// Two 503s for the PUT to the signed URL: the upload passes on its third attempt.
    static let twoFailures = #"[{"method": "PUT", "path": "/signed/", "action": "status", "status": 503, "times": 2}]"#

    static func pipeline(_ base: String) -> String {
        """
        version: 1
        name: verbose
        stages:
          - request:
              url: \(base)/api/upload-url
              headers: { Authorization: "Bearer ${API_TOKEN}" }
              json: { user_id: "{{dir.name}}", content_type: video/mov }
              backoff: 10ms
              as: ticket
          - upload: { method: put, url: "{{ticket.upload_info.upload_url}}", content_type: video/mov, backoff: 10ms }

        """
    }

    /// Runs `ingest ARGS` in a folder holding `in/alice/one.mov` (100,000 bytes) and the pipeline.
    func run(_ backend: FixtureBackend, _ arguments: [String], in folder: TemporaryFolder) throws -> CommandResult {
        _ = try writeRandomFile(folder.path + "/in/alice/one.mov", size: 100_000, seed: 3)
        _ = try folder.file("p.yml", Self.pipeline(backend.base))
        return try runCommand(
            TestPaths.ingest, ["run", "p.yml", "in", "--no-journal"] + arguments,
            environment: environmentWithoutProxies(["API_TOKEN": Self.token]), directory: folder.path)
    }

    /// The secrets of a run: the bearer token and every signature the backend handed out.
    func expectNoSecrets(_ text: String, _ backend: FixtureBackend) throws {
        #expect(!text.contains(Self.token), "the bearer token leaked: \(text)")
        let secrets = (try backend.state()["secrets"] as? [String]) ?? []
        #expect(!secrets.isEmpty, "the backend handed out no signed URL")
        for secret in secrets { #expect(!text.contains(secret), "a signature leaked: \(secret)") }
    }

    /// Ports, UUIDs, expiry times, durations and byte counts replaced, so the lines can be compared whole.
    static func normalized(_ text: String) -> String {
        let rules: [(String, String)] = [
            (#"127\.0\.0\.1:\d+"#, "HOST"), (#"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"#, "UUID"),
            (#"expires=\d+"#, "expires=T"), (#"in \d+\.\d+ s"#, "in S s"), (#"\d+(\.\d+)? (B|KiB|MiB)"#, "N B"),
        ]
        var result = text
        for (pattern, replacement) in rules {
            result = result.replacingOccurrences(of: pattern, with: replacement, options: .regularExpression)
        }
        return result
    }

    @Test func verboseShowsEachAttemptAndRetryWithSecretsRedacted() throws {
        let backend = try FixtureBackend(faults: Self.twoFailures, bearer: Self.token)
        let folder = try TemporaryFolder("verbose")
        defer { folder.remove() }
        let result = try run(backend, ["-v", "-q"], in: folder)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let lines = Self.normalized(result.stderr).split(separator: "\n").map(String.init)
        let put =
            "ingest: upload in/alice/one.mov: PUT http://HOST/signed/users/alice/UUID.mov?expires=T&X-Amz-Signature=REDACTED"
        #expect(
            lines == [
                "ingest: request in/alice/one.mov: POST http://HOST/api/upload-url → 200, N B sent, N B received in S s",
                put + " → 503 Service Unavailable, N B sent, N B received in S s; retry 2/3 in S s",
                put + " → 503 Service Unavailable, N B sent, N B received in S s; retry 3/3 in S s",
                put + " → 200, N B sent, N B received in S s",
            ], "\(result.stderr)")
        try expectNoSecrets(result.stderr + result.stdout, backend)
    }

    @Test func doubleVerboseAddsResponseHeadersAndRetryAfterIsNamed() throws {
        let faults =
            #"[{"method": "POST", "path": "/api/upload-url", "action": "status", "status": 429, "retry_after": 1}]"#
        let backend = try FixtureBackend(faults: faults, bearer: Self.token)
        let folder = try TemporaryFolder("vv")
        defer { folder.remove() }
        let result = try run(backend, ["-vv", "-q"], in: folder)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(
            Self.normalized(result.stderr).contains(
                "POST http://HOST/api/upload-url → 429 Too Many Requests, N B sent, N B received in S s; "
                    + "Retry-After 1 s; retry 2/3 in S s"), "\(result.stderr)")
        #expect(result.stderr.contains("    < Retry-After: 1\n"), "\(result.stderr)")
        #expect(result.stderr.contains("    < Content-Type: application/json\n"), "\(result.stderr)")
        try expectNoSecrets(result.stderr, backend)
    }

    @Test func jsonLogLinesParseAndCarryTheAttempts() throws {
        let backend = try FixtureBackend(faults: Self.twoFailures, bearer: Self.token)
        let folder = try TemporaryFolder("jsonlog")
        defer { folder.remove() }
        let result = try run(backend, ["--log-format", "json", "-q", "--report", "r.jsonl"], in: folder)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let events = try result.stderr.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any], "not JSON: \($0)")
        }
        #expect(events.count == 4, "\(result.stderr)")
        for event in events {
            for key in ["time", "level", "message", "file", "stage", "method", "url", "attempt", "seconds", "status"] {
                #expect(event[key] != nil, "\(key) missing in \(event)")
            }
            #expect(event["file"] as? String == "in/alice/one.mov")
        }
        let puts = events.filter { $0["method"] as? String == "PUT" }
        #expect(puts.map { $0["status"] as? Int } == [503, 503, 200])
        #expect(puts.map { $0["attempt"] as? Int } == [1, 2, 3])
        #expect(puts.prefix(2).allSatisfy { $0["retry_in"] is Double || $0["retry_in"] is Int })
        #expect(puts.allSatisfy { ($0["url"] as? String)?.contains("X-Amz-Signature=REDACTED") == true })
        try expectNoSecrets(result.stderr, backend)

        // The JSON Lines report: when the file started, seconds per stage, attempts per request.
        let report = try String(contentsOfFile: folder.path + "/r.jsonl", encoding: .utf8)
        let line = try #require(try JSONSerialization.jsonObject(with: Data(report.utf8)) as? [String: Any])
        let timings = try #require(line["timings"] as? [String: Any], "\(report)")
        #expect(timings["started"] is String)
        #expect(timings["seconds"] is Double || timings["seconds"] is Int)
        let stages = try #require(timings["stages"] as? [[String: Any]])
        #expect(stages.map { $0["stage"] as? String } == ["request", "upload"])
        let requests = try #require(timings["requests"] as? [[String: Any]])
        #expect(requests.map { $0["attempts"] as? Int } == [1, 3], "\(requests)")
        #expect(requests.map { $0["status"] as? Int } == [200, 200])
        try expectNoSecrets(report, backend)

        // Without -q (a pipe: plain progress lines would be due), standard error is still JSON Lines only, and
        // the summary is an event of its own.
        let loud = try run(backend, ["--log-format", "json"], in: folder)
        #expect(loud.status == 0, "\(loud.stdout)\(loud.stderr)")
        let loudEvents = loud.stderr.split(separator: "\n").map {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
        #expect(loudEvents.allSatisfy { $0 != nil }, "\(loud.stderr)")
        let summary = try #require(loudEvents.last ?? nil, "\(loud.stderr)")
        #expect(summary["files"] as? Int == 1 && summary["failed"] as? Int == 0, "\(summary)")
        #expect((summary["message"] as? String)?.hasPrefix("1 file, 97.7 KiB in ") == true, "\(summary)")
    }

    @Test func junitHasTimeAndFileOnEveryTestcase() throws {
        let backend = try FixtureBackend(bearer: Self.token)
        let folder = try TemporaryFolder("junit-time")
        defer { folder.remove() }
        let result = try run(backend, ["-q", "--report", "r.xml"], in: folder)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let xml = try String(contentsOfFile: folder.path + "/r.xml", encoding: .utf8)
        let testcase =
            #"<testcase classname="verbose" name="in/alice/one.mov" file="in/alice/one.mov" time="\d+\.\d{3}"/>"#
        #expect(xml.range(of: testcase, options: .regularExpression) != nil, "\(xml)")
    }

    @Test func aRunEndsWithOneSummaryLine() throws {
        let backend = try FixtureBackend(bearer: Self.token)
        let folder = try TemporaryFolder("summary")
        defer { folder.remove() }
        let result = try run(backend, [], in: folder)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.hasSuffix("1 passed, 0 failed, 0 skipped\n"), "\(result.stdout)")
        let last = result.stderr.split(separator: "\n").last.map(String.init) ?? ""
        #expect(
            last.range(
                of: #"^1 file, 97\.7 KiB in \d+\.\ds, [0-9.]+ (B|KiB|MiB|GiB)/s; 0 failed, 0 skipped$"#,
                options: .regularExpression) != nil, "\(result.stderr)")
        // -q: nothing on standard error at all.
        let quiet = try run(backend, ["-q"], in: folder)
        #expect(quiet.status == 0 && quiet.stderr.isEmpty, "\(quiet.stderr)")
    }

    /// On a terminal, every result line is followed by the status line before the next result (it used to stay
    /// erased until the next tick: a fast batch showed no status line at all).
    @Test func statusLineIsRedrawnAfterEveryResultLineOnATerminal() throws {
        var environment = ProcessInfo.processInfo.environment
        environment["CI"] = nil
        environment["TERM"] = "xterm"
        let result = try runCommand(
            "/usr/bin/env",
            [
                "python3", TestPaths.root + "/Tests/Fixtures/pty_run.py", TestPaths.ingest, "validate",
                "pipelines/preflight.yml", "Samples/",
            ],
            environment: environment, directory: TestPaths.root)
        #expect(result.status == 1, "\(result.stdout)")
        let screen = result.stdout.replacingOccurrences(of: "\r", with: "")
            .replacingOccurrences(of: "\u{1B}[1A", with: "").replacingOccurrences(of: "\u{1B}[2K", with: "")
        var results = 0
        var waiting: String?
        for line in screen.split(separator: "\n").map(String.init) {
            if line.hasPrefix("ok    ") || line.hasPrefix("FAIL  ") || line.hasPrefix("SKIP  ") {
                #expect(waiting == nil, "no status line between '\(waiting ?? "")' and '\(line)':\n\(screen)")
                waiting = line
                results += 1
            } else if line.range(of: #"^\d+/\d+ files"#, options: .regularExpression) != nil {
                waiting = nil
            }
        }
        #expect(results == 12, "\(screen)")
        #expect(waiting == nil, "no status line after the last result:\n\(screen)")
    }

    @Test func versionNamesTheCLibraries() throws {
        let result = try runCommand(TestPaths.ingest, ["--version"])
        #expect(result.status == 0, "\(result.stderr)")
        for pattern in [
            #"^ingest \d+\.\d+\.\d+$"#, #"^FFmpeg \S+"#, #"libavformat \d+\.\d+\.\d+, libavcodec \d+\.\d+\.\d+"#,
            #"^libjpeg-turbo \d+\.\d+\.\d+"#, #"^libcurl \d+\.\d+\.\d+ \(TLS: \S+"#, #"^libheif \d+\.\d+"#,
            #"^SQLite \d+\.\d+\.\d+$"#, #"^libpq \d+\.\d+$"#,
        ] {
            #expect(
                result.stdout.range(of: "(?m)" + pattern, options: .regularExpression) != nil,
                "\(pattern) not in:\n\(result.stdout)")
        }
    }
}
