import Foundation
import NativeSQLite
import Testing

@testable import Ingest
@testable import IngestCore
@testable import IngestJournal
@testable import IngestNetwork
@testable import IngestStages

/// `upload` with `method: s3` against a real S3 server that verifies SigV4 signatures (SeaweedFS). Objects are read
/// back with curl's own SigV4 (`SeaweedFS.curl`), and hashes come from `sha256sum`/`md5sum`, not from the code
/// under test.
@Suite(.serialized) struct S3UploadTests {
    let server: SeaweedFS
    let bucket = "ingest-s3-upload"
    let ingest = TestPaths.ingest

    init() throws {
        server = try SeaweedFS.shared()
        try server.createBucket(bucket)
    }

    /// Credentials for `${S3_KEY}`/`${S3_SECRET}`, and no AWS_* variables from the developer's shell.
    func environment(secret: String? = nil) -> [String: String] {
        var environment = environmentWithoutProxies([
            "S3_KEY": server.accessKey, "S3_SECRET": secret ?? server.secretKey,
        ])
        for name in ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_PROFILE"] {
            environment[name] = nil
        }
        return environment
    }

    func pipeline(
        _ upload: String, before: String = "",
        credentials: String = "access_key_id: ${S3_KEY}\n      secret_access_key: ${S3_SECRET}"
    ) -> String {
        """
        version: 1
        name: crowd
        stages:
        \(before)
          - upload:
              method: s3
              endpoint: \(server.endpoint)
              bucket: \(bucket)
              \(credentials)
              backoff: 50ms
        \(upload)

        """
    }

    func run(_ pipeline: String, _ inputs: [String], in folder: TemporaryFolder, environment: [String: String])
        throws -> (CommandResult, [[String: Any]])
    {
        let file = try folder.file("pipeline-\(UUID().uuidString.prefix(6)).yml", pipeline)
        return try runIngestWithReport(file, inputs, in: folder.path, environment: environment)
    }

    func messages(_ report: [String: Any]) -> [String] {
        ((report["failures"] as? [[String: Any]]) ?? []).compactMap { $0["message"] as? String }
    }

    func objectURL(_ key: String) -> String { "\(server.endpoint)/\(bucket)/\(key)" }

    /// Downloads the object and compares it with the file byte for byte (by sha256sum of both).
    func expectStoredCopy(of path: String, at key: String, in folder: TemporaryFolder) throws {
        let downloaded = folder.path + "/downloaded-\(UUID().uuidString.prefix(6))"
        let get = try server.curl(["-o", downloaded, objectURL(key)])
        #expect(get.status == 200, "GET \(key): \(get.body)")
        #expect(try sha256sum(downloaded) == (try sha256sum(path)))
    }

    /// Seed 004: crowd data keyed by geohash, with latitude, longitude and geohash as object metadata.
    @Test func singlePutStoresMetadataAndTheExactBytes() throws {
        let folder = try TemporaryFolder("s3-put")
        defer { folder.remove() }
        let input = folder.path + "/in/crowd/located.mov"
        try FileManager.default.createDirectory(
            atPath: folder.path + "/in/crowd", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: TestPaths.root + "/Samples/good/located.mov", toPath: input)
        let prefix = "put-\(UUID().uuidString.prefix(8))"
        let text = pipeline(
            """
                  key: "\(prefix)/{{geohash}}/{{sha256}}.{{file.ext}}"
                  metadata:
                    latitude: "{{probe.location.latitude}}"
                    longitude: "{{probe.location.longitude}}"
                    geohash: "{{geohash}}"
                  as: stored
            """, before: "  - geohash: { precision: 6, required: true }")
        let (result, reports) = try run(text, [folder.path + "/in"], in: folder, environment: environment())
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let report = try #require(reports.first)
        #expect(report["status"] as? String == "passed", "\(messages(report))")
        let stored = try #require((report["facts"] as? [String: Any])?["stored"] as? [String: Any])
        let geohash = Geohash.encode(latitude: 59.3293, longitude: 18.0686, precision: 6)
        let key = "\(prefix)/\(geohash)/\(try sha256sum(input)).mov"
        #expect(stored["key"] as? String == key)
        #expect(stored["bucket"] as? String == bucket)
        #expect(stored["parts"] as? Int == 0)
        #expect(stored["size"] as? Int == (try FileManager.default.attributesOfItem(atPath: input)[.size] as? Int))
        #expect(stored["location"] as? String == objectURL(key))
        // A single PUT's ETag is the MD5 of the bytes S3 stored.
        let md5 = String(try runTool("md5sum", [input]).stdout.prefix(32))
        #expect(stored["etag"] as? String == md5)

        let head = try server.curl(["-s", "-I", objectURL(key)])
        #expect(head.status == 200)
        let headers = head.body.lowercased()
        #expect(headers.contains("x-amz-meta-geohash: \(geohash)"), "\(head.body)")
        #expect(headers.contains("x-amz-meta-latitude: 59.329"), "\(head.body)")
        #expect(headers.contains("x-amz-meta-longitude: 18.068"), "\(head.body)")
        #expect(headers.contains("content-type: video/quicktime"), "\(head.body)")
        try expectStoredCopy(of: input, at: key, in: folder)
    }

    /// 12 MiB with 5 MiB parts: three UploadPart requests (5 + 5 + 2 MiB), each a slice of the file on disk.
    @Test(arguments: ["md5", "sha256"]) func multipartUploadIsByteIdentical(checksum: String) throws {
        let folder = try TemporaryFolder("s3-multipart")
        defer { folder.remove() }
        let input = try writeRandomFile(folder.path + "/in/big.bin", size: 12 << 20, seed: 7)
        let prefix = "multi-\(checksum)-\(UUID().uuidString.prefix(8))"
        let text = pipeline(
            """
                  key: "\(prefix)/{{file.name}}"
                  part_size: 5MiB
                  checksum: \(checksum)
                  content_type: application/octet-stream
                  metadata: { origin: "{{dir.name}}" }
            """)
        let (result, reports) = try run(text, [folder.path + "/in"], in: folder, environment: environment())
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let report = try #require(reports.first)
        #expect(report["status"] as? String == "passed", "\(messages(report))")
        // Without `as:`, the result is under `upload`.
        let stored = try #require((report["facts"] as? [String: Any])?["upload"] as? [String: Any])
        #expect(stored["parts"] as? Int == 3)
        #expect(stored["size"] as? Int == 12 << 20)
        #expect((stored["etag"] as? String)?.hasSuffix("-3") == true, "\(stored)")
        let key = "\(prefix)/big.bin"
        try expectStoredCopy(of: input, at: key, in: folder)
        let head = try server.curl(["-s", "-I", objectURL(key)])
        #expect(head.body.lowercased().contains("x-amz-meta-origin: in"), "\(head.body)")
        #expect(try openUploads().contains(prefix) == false)
    }

    /// A run killed after S3 stored the objects but before the journal recorded the uploads (simulated by setting
    /// the journal back to "upload started"): the resumed run proves each upload done with a HEAD (the file's size,
    /// and the ETag a single PUT or the 3-part multipart upload would produce) and sends nothing again. An object
    /// that differs (same size, other bytes) is no proof: that file is uploaded anew.
    @Test func aResumedUploadThatS3AlreadyHoldsIsNotSentAgain() throws {
        let proxy = try FixtureBackend(upstream: server.endpoint)
        defer { proxy.stop() }
        let folder = try TemporaryFolder("s3-resume-head")
        defer { folder.remove() }
        let small = try writeRandomFile(folder.path + "/in/small.bin", size: 300_000, seed: 3)
        let big = try writeRandomFile(folder.path + "/in/big.bin", size: 12 << 20, seed: 4)
        let prefix = "resume-\(UUID().uuidString.prefix(8))"
        let text = pipeline(
            """
                  key: "\(prefix)/{{file.name}}"
                  part_size: 5MiB
                  content_type: application/octet-stream
            """
        ).replacingOccurrences(of: "endpoint: \(server.endpoint)", with: "endpoint: \(proxy.base)")
        let file = try folder.file("p.yml", text)
        func run() throws -> (CommandResult, [[String: Any]]) {
            try runIngestWithReport(file, ["in"], in: folder.path, environment: environment())
        }
        /// What a `kill -9` right after the uploads would have left: the upload started, never recorded as done.
        func cutShortAfterTheUploads() throws {
            let journal = try Database(path: folder.path + "/.ingest/journal.sqlite", create: false)
            try journal.execute(
                "UPDATE stages SET status = 'started', outputs = NULL WHERE name = 'upload'; "
                    + "UPDATE files SET state = 'running'")
        }
        /// Requests the proxy forwarded since `start`, as "METHOD path" (not the test's own reads of its state).
        func requests(since start: Int) throws -> [String] {
            try proxy.requests().dropFirst(start).map { "\($0[0]) \($0[1])" }.filter { !$0.hasSuffix("/_state") }
        }

        let (first, _) = try run()
        #expect(first.status == 0, "\(first.stdout)\(first.stderr)")
        // The journal has both files' identity (XXH3-128); the multipart one's was computed beside the upload.
        var hashes: [String: String] = [:]
        try SQLiteJournal(path: folder.path + "/.ingest/journal.sqlite", writer: false, create: false).forEachRecord {
            hashes[$0.relativePath] = $0.sha256
        }
        #expect(hashes == ["small.bin": try journalIdentity(small), "big.bin": try journalIdentity(big)])
        try cutShortAfterTheUploads()
        var start = try proxy.requests().count
        let (second, reports) = try run()
        #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
        let resumed = try requests(since: start).sorted()
        #expect(
            resumed == ["HEAD /\(bucket)/\(prefix)/big.bin", "HEAD /\(bucket)/\(prefix)/small.bin"], "\(resumed)")
        for report in reports {
            let facts = try #require(report["facts"] as? [String: Any])
            let notes = facts["notes"] as? [String] ?? []
            #expect(notes.first?.hasPrefix("already uploaded: S3 has s3://\(bucket)/\(prefix)/") == true, "\(report)")
            let stored = try #require(facts["upload"] as? [String: Any])
            #expect(stored["parts"] as? Int == ((report["path"] as? String)?.hasSuffix("big.bin") == true ? 3 : 0))
        }

        // The small object replaced by other bytes of the same size: its ETag no longer matches.
        let other = try writeRandomFile(folder.path + "/other.bin", size: 300_000, seed: 5)
        let put = try server.curl(["-T", other, objectURL("\(prefix)/small.bin")])
        #expect(put.status == 200, "\(put.body)")
        try cutShortAfterTheUploads()
        start = try proxy.requests().count
        let (third, _) = try run()
        #expect(third.status == 0, "\(third.stdout)\(third.stderr)")
        let redone = try requests(since: start).sorted()
        #expect(
            redone == [
                "HEAD /\(bucket)/\(prefix)/big.bin", "HEAD /\(bucket)/\(prefix)/small.bin",
                "PUT /\(bucket)/\(prefix)/small.bin",
            ], "\(redone)")
        try expectStoredCopy(of: small, at: "\(prefix)/small.bin", in: folder)
        try expectStoredCopy(of: big, at: "\(prefix)/big.bin", in: folder)
    }

    @Test func wrongSecretFailsWithSignatureDoesNotMatch() throws {
        let folder = try TemporaryFolder("s3-denied")
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/a.bin", size: 10_000)
        let wrong = "wrong/Secret+Value-123456"
        let (result, reports) = try run(
            pipeline("      key: \"denied/{{file.name}}\""), [folder.path + "/in"], in: folder,
            environment: environment(secret: wrong))
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        let report = try #require(reports.first)
        #expect(report["status"] as? String == "failed")
        let text = messages(report).joined(separator: "\n")
        #expect(text.contains("403"), "\(text)")
        #expect(text.contains("SignatureDoesNotMatch"), "\(text)")
        #expect(!(result.stdout + result.stderr + text).contains(wrong))
    }

    /// Users expect a missing key to stop the run before the first file, as a missing `${VAR}` does: exit 2 at
    /// load, naming the variables, with nothing sent.
    @Test func missingCredentialsStopTheRunAtLoad() throws {
        let folder = try TemporaryFolder("s3-nocreds")
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/a.bin", size: 1000)
        let prefix = "nocreds-\(UUID().uuidString.prefix(8))"
        let (result, reports) = try run(
            pipeline("      key: \"\(prefix)/{{file.name}}\"", credentials: "region: us-east-1"),
            [folder.path + "/in"], in: folder, environment: environment())
        #expect(result.status == 2, "\(result.stdout)\(result.stderr)")
        #expect(result.stderr.contains("AWS_ACCESS_KEY_ID"), "\(result.stderr)")
        #expect(result.stderr.contains("AWS_SECRET_ACCESS_KEY"), "\(result.stderr)")
        #expect(reports.isEmpty)
        let listing = try server.curl(["\(server.endpoint)/\(bucket)?prefix=\(prefix)"])
        #expect(listing.status == 200)
        #expect(!listing.body.contains("<Key>"), "\(listing.body)")

        // Only the secret set: the error names just the one missing, and never prints the secret.
        var partial = environment()
        partial["AWS_SECRET_ACCESS_KEY"] = "do-not-print-this-secret"
        let (second, _) = try run(
            pipeline("      key: \"\(prefix)/{{file.name}}\"", credentials: "region: us-east-1"),
            [folder.path + "/in"], in: folder, environment: partial)
        #expect(second.status == 2)
        #expect(second.stderr.contains("AWS_ACCESS_KEY_ID"), "\(second.stderr)")
        #expect(!second.stderr.contains("do-not-print-this-secret"))
    }

    @Test func badS3OptionsFailAtLoad() throws {
        let folder = try TemporaryFolder("s3-options")
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/a.bin", size: 1000)
        for (options, said) in [
            ("      part_size: 1MiB", "part_size must be between 5MiB and 5GiB"),
            ("      url: http://127.0.0.1:1/x", "'url' is not used by method s3"),
            ("      key: \"{{file.name}}\"\n      access_key_id: onlyone", "give both 'access_key_id'"),
        ] {
            let text = pipeline(options, credentials: "region: us-east-1")
            let (result, _) = try run(text, [folder.path + "/in"], in: folder, environment: environment())
            #expect(result.status == 2, "\(options): \(result.stderr)")
            #expect(result.stderr.contains(said), "\(options): \(result.stderr)")
        }
    }

    /// A key that would climb out of its prefix fails the file, and nothing is sent.
    @Test func keyWithDotDotFailsTheFile() throws {
        let folder = try TemporaryFolder("s3-key")
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/a.bin", size: 1000)
        let prefix = "key-\(UUID().uuidString.prefix(8))"
        let (result, reports) = try run(
            pipeline("      key: \"\(prefix)/../{{file.name}}\""), [folder.path + "/in"], in: folder,
            environment: environment())
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        let report = try #require(reports.first)
        #expect(messages(report).contains { $0.contains("'..' segment") }, "\(messages(report))")
        let listing = try server.curl(["\(server.endpoint)/\(bucket)?prefix=\(prefix)"])
        #expect(!listing.body.contains("<Key>"), "\(listing.body)")
        let root = try server.curl(["-s", "-I", objectURL("a.bin")])
        #expect(root.status == 404)
    }

    /// The file grows after part 1 is stored: part 2 refuses to send a torn file, and the upload is aborted, so
    /// ListMultipartUploads no longer shows it (it did while the upload was open).
    @Test func failedMultipartUploadIsAborted() throws {
        let folder = try TemporaryFolder("s3-abort")
        defer { folder.remove() }
        let input = try writeRandomFile(folder.path + "/grow.bin", size: 11 << 20, seed: 3)
        var options = S3UploadOptions()
        options.bucket = bucket
        options.endpoint = server.endpoint
        options.accessKeyID = server.accessKey
        options.secretAccessKey = server.secretKey
        options.region = server.region
        options.partSize = ByteSize(bytes: 5 << 20)
        var uploader = try S3Uploader(
            stage: "upload", options: options, network: NetworkOptions(), limiter: nil, environment: [:])
        let key = "abort-\(UUID().uuidString.prefix(8))/grow.bin"
        nonisolated(unsafe) var openWhileUploading = false
        let server = self.server
        let bucket = self.bucket
        uploader.afterPart = { number in
            guard number == 1 else { return }
            let listing = try server.curl(["\(server.endpoint)/\(bucket)?uploads="])
            openWhileUploading = listing.body.contains(key)
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: input))
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(repeating: 1, count: 4096))
            try handle.close()
        }
        let error = #expect(throws: ItemFailed.self) {
            try uploader.upload(
                path: input, key: key, headers: [], contentType: "application/octet-stream")
        }
        #expect(openWhileUploading, "ListMultipartUploads did not show the open upload")
        let failure = try #require(error?.failures.first)
        #expect(failure.rule.rawValue == "changed", "\(failure)")
        #expect(failure.message.contains("multipart upload aborted"), "\(failure)")
        #expect(try openUploads().contains(key) == false)
        let head = try server.curl(["-s", "-I", objectURL(key)])
        #expect(head.status == 404)
    }

    /// The bucket's ListMultipartUploads answer (keys of uploads still open).
    func openUploads() throws -> String {
        let listing = try server.curl(["\(server.endpoint)/\(bucket)?uploads="])
        #expect(listing.status == 200, "\(listing.body)")
        return listing.body
    }
}
