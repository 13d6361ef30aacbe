import Foundation
import Testing

@testable import IngestCore
@testable import IngestJournal
@testable import IngestNetwork
@testable import IngestStages
@testable import IngestTestSupport

/// What a run does when the network or the user gets in the way: Ctrl-C in the middle of uploads, retries signed
/// anew, missing credentials, and each kind of bad address or server answered with a clear message.
@Suite(.serialized) struct UploadReliabilityTests {
    let ingest = TestPaths.ingest

    func run(
        _ pipeline: String, _ inputs: [String], in folder: TemporaryFolder, environment: [String: String] = [:],
        command: String = "run"
    ) throws -> (CommandResult, [[String: Any]]) {
        let file = try folder.file("pipeline-\(UUID().uuidString.prefix(6)).yml", pipeline)
        return try runIngestWithReport(
            file, inputs, in: folder.path, environment: environmentWithoutProxies(environment), command: command)
    }

    func failures(_ report: [String: Any]) -> [[String: Any]] { (report["failures"] as? [[String: Any]]) ?? [] }

    /// Files under the work folder other than its marker.
    func workFiles(_ folder: TemporaryFolder) -> [String] {
        let work = folder.path + "/.ingest/work"
        let all = FileManager.default.enumerator(atPath: work)?.allObjects as? [String] ?? []
        return all.filter { name in
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: work + "/" + name, isDirectory: &isDirectory)
            return !isDirectory.boolValue && name != WorkFolder.marker
        }
    }

    /// Polls `condition` every 50 ms for up to `attempts` tries; true once it holds.
    func eventually(attempts: Int = 600, _ condition: () throws -> Bool) rethrows -> Bool {
        for _ in 0..<attempts {
            if try condition() { return true }
            usleep(50_000)
        }
        return false
    }

    // MARK: - Cancellation

    /// Ctrl-C while two uploads crawl to a slow endpoint: the transfers are cancelled (a throttled 3 MB PUT would
    /// take a minute), the run reports them as interrupted, prints a summary and exits 130, leaves no work file and
    /// journals nothing as done. Its tickets expire before the next run, which renews them (the journal's URL is
    /// stale), and finishes the batch with every file stored exactly once.
    @Test func ctrlCStopsUploadsInFlightAndTheNextRunFinishesTheBatch() throws {
        let throttled =
            #"[{"method": "PUT", "path": "/signed/", "action": "throttle", "bytes_per_second": 50000, "times": 100}]"#
        let backend = try FixtureBackend(faults: throttled, urlTTL: 4)
        let folder = try TemporaryFolder("sigint")
        defer { folder.remove() }
        let count = 5
        var paths: [String] = []
        for index in 0..<count {
            paths.append(
                try writeRandomFile(
                    folder.path + "/in/user\(index)/clip\(index).mov", size: 3_000_000 + index, seed: UInt64(index) + 7)
            )
        }
        let pipeline = try folder.file("p.yml", UploadPipelineTests.hockeyPipeline(backend.base))

        let errors = Pipe()
        let process = try startIngest(
            ["run", pipeline, "in", "-q", "--report", "first.jsonl"], in: folder.path, standardError: errors)
        let bothUploading = try eventually {
            (try backend.state()["arrived"] as? [[Any]] ?? []).count >= 2
        }
        #expect(bothUploading, "the uploads never started")
        kill(process.processIdentifier, SIGINT)
        // Bounded: without cancellation the throttled uploads would run for about a minute more.
        let ended = eventually(attempts: 400) { !process.isRunning }
        if !ended {
            kill(process.processIdentifier, SIGKILL)
            Issue.record("ingest kept running 20 s after SIGINT")
        }
        process.waitUntilExit()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 130, "\(stderr)")
        #expect(stderr.contains("interrupted by SIGINT"), "\(stderr)")
        #expect(stderr.contains("2 file(s) stopped in flight"), "\(stderr)")

        // The report names the two files stopped mid-upload; files not started are not in it.
        let first = reportObjects(folder.path + "/first.jsonl")
        #expect(first.count == 2, "\(first)")
        for report in first {
            let failure = failures(report).first
            #expect(failure?["rule"] as? String == "interrupted", "\(report)")
            #expect((failure?["message"] as? String)?.contains("interrupted (SIGINT) during PUT") == true, "\(report)")
        }
        #expect(try backend.objects().isEmpty)
        #expect(workFiles(folder).isEmpty, "left in the work folder: \(workFiles(folder))")
        let journal = try SQLiteJournal(path: folder.path + "/.ingest/journal.sqlite", writer: false, create: false)
        #expect(try journal.counts()[.done] == nil)
        #expect(try journal.counts()[.running] == 2)

        // The tickets the journal kept expire (the backend's clock moves past their 4 s): the resumed uploads get 403
        // and renew them.
        try backend.advanceClock(by: 5)
        try backend.setFaults("[]")
        let second = try runCommand(
            ingest, ["run", pipeline, "in"], environment: environmentWithoutProxies(), directory: folder.path)
        #expect(second.status == 0, "second run: \(second.stdout)\(second.stderr)")
        let objects = try backend.objects()
        #expect(objects.count == count)
        #expect(objects.values.allSatisfy { $0["count"] as? Int == 1 }, "\(objects)")
        let stored = Set(objects.values.compactMap { $0["sha256"] as? String })
        #expect(stored == Set(try paths.map(sha256sum)))
        let expired = try backend.requests().filter { $0[0] as? String == "PUT" && "\($0[2])" == "403" }
        #expect(expired.count >= 2, "the two resumed files should have renewed their tickets")
        #expect(try journal.counts() == [.done: count])
    }

    /// A multipart upload whose part is in flight when the run is cancelled: the part's transfer stops, and the
    /// upload is aborted (the fixture's S3 sees AbortMultipartUpload) so no parts stay stored.
    @Test func cancellingAMultipartUploadAbortsIt() throws {
        let backend = try FixtureBackend(
            faults:
                #"[{"method": "PUT", "path": "/fixture/", "action": "throttle", "bytes_per_second": 100000, "times": 9}]"#
        )
        let folder = try TemporaryFolder("s3-cancel")
        defer { folder.remove() }
        let input = try writeRandomFile(folder.path + "/big.bin", size: 11 << 20, seed: 5)
        let uploader = try S3Uploader(
            stage: "upload", options: fixtureS3Options(backend), network: NetworkOptions(), limiter: nil,
            environment: [:])
        let cancellation = RunCancellation()
        let canceller = Thread {
            _ = try? self.eventually { (try backend.state()["arrived"] as? [[Any]] ?? []).count >= 1 }
            cancellation.cancel(reason: "SIGINT")
        }
        canceller.start()
        let error = #expect(throws: ItemFailed.self) {
            try uploader.upload(
                path: input, key: "cancel/big.bin", headers: [], contentType: "application/octet-stream",
                cancellation: cancellation)
        }
        let failure = try #require(error?.failures.first)
        #expect(failure.rule.rawValue == "interrupted", "\(failure)")
        #expect(failure.message.contains("(multipart upload aborted)"), "\(failure)")
        #expect(try backend.counts("callbacks")["abort"] == 1)
        #expect(try backend.objects().isEmpty)
    }

    /// `ingest run` with a multipart upload in flight: the first Ctrl-C cancels the part and starts the abort (here
    /// a slow one); a second Ctrl-C quits at once, exit 130, without waiting for S3's answer. Without a journal: with
    /// one, Ctrl-C keeps the upload for the next run to resume (S3MultipartResumeTests) and sends no abort.
    @Test func aSecondCtrlCQuitsAtOnce() throws {
        let faults = """
            [{"method": "PUT", "path": "/fixture/", "action": "throttle", "bytes_per_second": 100000, "times": 9},
             {"method": "DELETE", "path": "/fixture/", "action": "delay", "seconds": 25, "times": 1}]
            """
        let backend = try FixtureBackend(faults: faults)
        let folder = try TemporaryFolder("sigint-twice")
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/big.bin", size: 11 << 20, seed: 8)
        let pipeline = try folder.file(
            "p.yml",
            """
            version: 1
            name: twice
            stages:
              - upload: { method: s3, bucket: fixture, endpoint: "\(backend.base)", region: us-east-1, access_key_id: AKID, secret_access_key: secret, part_size: 5MiB }

            """)
        let process = try startIngest(["run", pipeline, "in", "-q", "--no-journal"], in: folder.path)
        #expect(try eventually { (try backend.state()["arrived"] as? [[Any]] ?? []).count >= 1 })
        kill(process.processIdentifier, SIGINT)
        // The abort reached the server, which holds its answer.
        #expect(
            try eventually {
                (try backend.state()["signed"] as? [[Any]] ?? []).contains { $0[0] as? String == "DELETE" }
            })
        kill(process.processIdentifier, SIGINT)
        let ended = eventually(attempts: 400) { !process.isRunning }
        if !ended { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        #expect(ended)
        #expect(process.terminationStatus == 130)
        // The process was gone before the server answered the abort.
        #expect(try backend.requests().allSatisfy { $0[0] as? String != "DELETE" })
    }

    func fixtureS3Options(_ backend: FixtureBackend) -> S3UploadOptions {
        var options = S3UploadOptions()
        options.bucket = "fixture"
        options.endpoint = backend.base
        options.accessKeyID = "AKIDFIXTURE"
        options.secretAccessKey = "fixture-secret"
        options.region = "us-east-1"
        options.partSize = ByteSize(bytes: 5 << 20)
        return options
    }

    // MARK: - Signatures per attempt

    /// A part answered 503 with `Retry-After: 2` is sent again with a new signature: its x-amz-date is the time
    /// of the retry, not of the first attempt (S3 refuses a signature more than 15 minutes old). The wait and the
    /// dates are the run's clock's (the file's `timings` carry it), so the test waits no real time (#32 §6).
    @Test func aRetriedPartIsSignedAnew() throws {
        let backend = try FixtureBackend(
            faults:
                #"[{"method": "PUT", "path": "/fixture/", "action": "status", "status": 503, "retry_after": "2", "times": 1}]"#
        )
        let folder = try TemporaryFolder("s3-resign")
        defer { folder.remove() }
        let input = try writeRandomFile(folder.path + "/big.bin", size: 11 << 20, seed: 6)
        let uploader = try S3Uploader(
            stage: "upload", options: fixtureS3Options(backend), network: NetworkOptions(), limiter: nil,
            environment: [:])
        let clock = ManualClock(date: Date(timeIntervalSince1970: 1_800_000_000))  // 2027-01-15 08:00:00 UTC
        let result = try uploader.upload(
            path: input, key: "resign/big.bin", headers: [], contentType: "application/octet-stream",
            timings: FileTimings(clock: clock))
        #expect(result.parts == 3)
        #expect(clock.sleeps == [2], "the Retry-After was not waited on the run's clock: \(clock.sleeps)")
        let signed = try #require(try backend.state()["signed"] as? [[Any]])
        // Parts go up concurrently: the 503 meets whichever part came first, and only that part is sent twice.
        let attemptsByPart = Dictionary(
            grouping: signed.filter {
                $0[0] as? String == "PUT" && ($0[2] as? String)?.hasPrefix("partNumber=") == true
            },
            by: { ($0[2] as? String)?.split(separator: "&").first.map(String.init) ?? "" })
        let retried = attemptsByPart.values.filter { $0.count > 1 }
        #expect(retried.count == 1, "\(signed)")
        let dates = (retried.first ?? []).compactMap { $0[3] as? String }
        #expect(dates == ["20270115T080000Z", "20270115T080002Z"], "\(signed)")
        #expect(try backend.objects()["resign/big.bin"]?["sha256"] as? String == (try sha256sum(input)))
    }

    // MARK: - Credentials

    /// `ingest validate` sends nothing, so an `s3` upload without credentials does not stop it; `ingest run` stops
    /// before any work (no journal, no report line), exit 2, naming what to set.
    @Test func missingS3CredentialsStopOnlyTheRun() throws {
        let folder = try TemporaryFolder("s3-nocreds-validate")
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/a.bin", size: 1000)
        let pipeline = """
            version: 1
            name: crowd
            stages:
              - validate: { extensions: [bin], sniff: false }
              - upload: { method: s3, bucket: crowd, endpoint: "http://127.0.0.1:1", key: "{{file.name}}" }

            """
        var environment: [String: String] = [:]
        for name in ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"] { environment[name] = "" }
        let (validated, validateReports) = try run(
            pipeline, [folder.path + "/in"], in: folder, environment: environment, command: "validate")
        #expect(validated.status == 0, "\(validated.stderr)")
        #expect(validateReports.first?["status"] as? String == "passed")

        let (ran, runReports) = try run(pipeline, [folder.path + "/in"], in: folder, environment: environment)
        #expect(ran.status == 2, "\(ran.stdout)\(ran.stderr)")
        #expect(ran.stderr.contains(":5:5: error: upload: missing AWS credentials"), "\(ran.stderr)")
        #expect(ran.stderr.contains("AWS_ACCESS_KEY_ID"), "\(ran.stderr)")
        #expect(runReports.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/.ingest/journal.sqlite"))
    }

    // MARK: - Bad addresses and answers

    /// A name that does not resolve fails at once (no retry: it will not resolve the next second), with curl's text.
    @Test func dnsFailureFailsFastWithCurlsText() throws {
        let folder = try TemporaryFolder("dns")
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/u/a.mov", size: 1000)
        let (result, reports) = try run(
            UploadPipelineTests.hockeyPipeline("https://nonexistent.invalid"), [folder.path + "/in"], in: folder)
        #expect(result.status == 1)
        let report = try #require(reports.first)
        let failure = try #require(failures(report).first)
        #expect(failure["rule"] as? String == "dns", "\(failure)")
        let message = failure["message"] as? String ?? ""
        #expect(message.contains("POST https://nonexistent.invalid/api/upload-url: "), "\(message)")
        #expect(message.contains("resolve host") && message.contains("nonexistent.invalid"), "\(message)")
        #expect(!message.contains("attempts"), "\(message)")
    }

    /// HTTPS to a server whose certificate no system CA signed fails fast with curl's words; with `ca_bundle`
    /// naming that certificate, the same pipeline uploads.
    @Test func selfSignedTLSFailsUnlessTheCABundleTrustsIt() throws {
        let folder = try TemporaryFolder("tls")
        defer { folder.remove() }
        let certificate = try makeSelfSignedCertificate(in: folder)
        let backend = try FixtureBackend(tls: certificate)
        let path = try writeRandomFile(folder.path + "/in/u/a.mov", size: 300_000)
        func pipeline(_ trust: String) -> String {
            """
            version: 1
            name: tls
            stages:
              - request: { url: "\(backend.base)/api/upload-url", json: { user_id: u, filename: "{{file.name}}" }, backoff: 50ms\(trust), as: ticket }
              - upload: { method: put, url: "{{ticket.upload_url}}", backoff: 50ms\(trust) }

            """
        }
        let (refused, refusedReports) = try run(pipeline(""), [folder.path + "/in"], in: folder)
        #expect(refused.status == 1)
        let report = try #require(refusedReports.first)
        let failure = try #require(failures(report).first)
        #expect(failure["rule"] as? String == "tls", "\(failure)")
        let message = failure["message"] as? String ?? ""
        #expect(message.contains("certificate"), "\(message)")
        #expect(!message.contains("attempts"), "\(message)")
        // The handshake failed: no request reached the server.
        #expect((try backend.state(caBundle: certificate.cert)["tickets"] as? [String: Int])?.isEmpty == true)

        let (trusted, trustedReports) = try run(
            pipeline(", ca_bundle: \"\(certificate.cert)\""), [folder.path + "/in"], in: folder)
        #expect(trusted.status == 0, "\(trustedReports)")
        let objects = try backend.objects(caBundle: certificate.cert)
        #expect(objects.values.first?["sha256"] as? String == (try sha256sum(path)))
    }

    /// Seed 001's pipeline on one small file with the upload URL template replaced by `uploadURL`; the run must
    /// fail: returns the file's first failure.
    func failureOfAHockeyRun(
        uploadURL: String, backend: FixtureBackend, _ name: String
    ) throws -> [String: Any] {
        let folder = try TemporaryFolder(name)
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/u/a.mov", size: 1000)
        let pipeline = UploadPipelineTests.hockeyPipeline(backend.base).replacingOccurrences(
            of: "{{ticket.upload_info.upload_url}}", with: uploadURL)
        let (result, reports) = try run(pipeline, [folder.path + "/in"], in: folder)
        #expect(result.status == 1)
        let report = try #require(reports.first)
        return try #require(failures(report).first)
    }

    /// A 4xx with an S3 XML error body: the failure shows the status and S3's Code and Message.
    @Test func s3ErrorBodyIsShownWithCodeAndMessage() throws {
        let backend = try FixtureBackend()
        // A tampered signature: the fixture answers as S3 does.
        let failure = try failureOfAHockeyRun(
            uploadURL: "{{ticket.upload_info.upload_url}}0", backend: backend, "xml-error")
        #expect(failure["rule"] as? String == "status")
        let message = failure["message"] as? String ?? ""
        #expect(
            message.contains(
                "answered 403 Forbidden: SignatureDoesNotMatch: The request signature we calculated does not match"),
            "\(message)")
        #expect(!message.contains("attempts"))  // a 403 is not retried
    }

    /// A ticket whose upload URL is not a URL (a storage path) fails the file before anything is sent, saying so.
    @Test func uploadURLThatIsNotAURLIsRefused() throws {
        let backend = try FixtureBackend()
        let failure = try failureOfAHockeyRun(
            uploadURL: "{{ticket.upload_info.storage_path}}", backend: backend, "not-a-url")
        #expect(failure["rule"] as? String == "refused", "\(failure)")
        #expect(
            (failure["message"] as? String).map {
                $0.contains("'users/u/") && $0.contains("' is not an absolute http(s) URL")
            }
                == true,
            "\(failure)")
        #expect(try backend.requests().allSatisfy { $0[0] as? String != "PUT" })
    }

    /// No byte for `stall_timeout`: the attempt is aborted with curl's "too slow" text, and retried. (curl averages
    /// the speed over the last few seconds, so the bytes of the request itself keep a stall from showing for
    /// about five seconds: the server here stays silent for longer than that.)
    @Test func aStalledServerIsAbortedByTheStallTimeout() throws {
        let backend = try FixtureBackend(
            faults: #"[{"method": "POST", "path": "/api/upload-url", "action": "delay", "seconds": 20, "times": 2}]"#)
        let folder = try TemporaryFolder("stall")
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/u/a.mov", size: 1000)
        let pipeline = """
            version: 1
            name: stall
            stages:
              - request: { url: "\(backend.base)/api/upload-url", json: { user_id: u, filename: "{{file.name}}" }, stall_timeout: 1s, max_attempts: 2, backoff: 50ms, as: ticket }

            """
        let (result, reports) = try run(pipeline, [folder.path + "/in"], in: folder)
        #expect(result.status == 1)
        let report = try #require(reports.first)
        let message = failures(report).first?["message"] as? String ?? ""
        #expect(message.contains("too slow"), "\(message)")
        #expect(message.contains("(after 2 attempts)"), "\(message)")
    }

    /// `http_proxy` from the environment is honoured: a host only the proxy can reach is reached through it.
    @Test func proxyFromTheEnvironmentIsUsed() throws {
        let backend = try FixtureBackend()
        let folder = try TemporaryFolder("proxy")
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/u/a.mov", size: 1000)
        let pipeline = """
            version: 1
            name: proxy
            stages:
              - request: { url: "http://ingest-proxy-check.invalid/api/upload-url", json: { user_id: u, filename: "{{file.name}}" }, allow_http: true, as: ticket }

            """
        let (result, reports) = try run(
            pipeline, [folder.path + "/in"], in: folder, environment: ["http_proxy": backend.base])
        #expect(result.status == 0, "\(reports)")
        #expect(try backend.state()["proxied"] as? Int == 1)
        #expect(try backend.counts("tickets") == ["/api/upload-url": 1])
    }
}

extension FixtureBackend {
    func objects(caBundle: String) throws -> [String: [String: Any]] {
        (try state(caBundle: caBundle)["objects"] as? [String: [String: Any]]) ?? [:]
    }
}
