import Foundation
import NativeCurl
import Testing

@testable import Ingest
@testable import IngestCore
@testable import IngestJournal
@testable import IngestNetwork

/// No false success on upload: a server that stops reading the body and answers 200 (or 204) anyway has not
/// received the file. curl ends such a transfer without error; only its count of bytes sent tells, and every
/// method (`put`, `s3-post`, `s3` single PUT and parts) must fail the attempt and retry it like a dropped
/// connection. For `s3`, the answer must also carry the ETag of the bytes sent.
///
/// The fixture backend's `answer_early` fault reads 100 bytes, answers and closes. The files are far larger than
/// what loopback socket buffers take in before the answer comes back (curl sent 64 KiB–2.6 MiB of 60 MB in trials).
@Suite(.serialized) struct UploadDeliveryTests {
    static func early(_ method: String, _ path: String, status: Int = 200, times: Int, etag: String? = nil) -> String {
        let headers = etag.map { #", "headers": {"ETag": "\"\#($0)\""}"# } ?? ""
        return #"[{"method": "\#(method)", "path": "\#(path)", "action": "answer_early", "after_bytes": 100, "#
            + #""status": \#(status), "times": \#(times)\#(headers)}]"#
    }

    func run(_ pipeline: String, in folder: TemporaryFolder) throws -> (CommandResult, [String: Any]) {
        let file = try folder.file("pipeline.yml", pipeline)
        let report = folder.path + "/report.jsonl"
        let result = try runCommand(
            TestPaths.ingest, ["run", file, folder.path + "/in", "--report", report, "-q"],
            environment: environmentWithoutProxies(), directory: folder.path)
        return (result, reportObjects(report).first ?? [:])
    }

    func message(_ report: [String: Any]) -> String {
        ((report["failures"] as? [[String: Any]])?.first?["message"] as? String) ?? "no failure in \(report)"
    }

    func md5sum(_ path: String, bytes: Int? = nil) throws -> String {
        let command = bytes.map { "head -c \($0) '\(path)' | md5sum" } ?? "md5sum '\(path)'"
        return String(try runTool("sh", ["-c", command]).stdout.prefix(32))
    }

    // MARK: - The check itself

    /// `HTTPClient` fails a transfer whose 2xx answer came before the body was out, with both counts.
    @Test func aTransferAnsweredBeforeItsBodyWentOutFails() throws {
        let backend = try FixtureBackend(faults: Self.early("PUT", "/signed/", times: 1))
        let folder = try TemporaryFolder("early-client")
        defer { folder.remove() }
        let path = try writeRandomFile(folder.path + "/big.bin", size: 24_000_000)
        let result = HTTPClient.shared.perform(
            HTTPRequest(method: "PUT", url: backend.base + "/signed/x", body: try HTTPBody.file(path)))
        guard case .failure(let error) = result,
            case .incomplete(status: 200, sent: let sent, length: 24_000_000) = error
        else {
            Issue.record("expected an incomplete transfer, got \(result)")
            return
        }
        #expect(sent < 24_000_000)
        #expect(error.isTransient)
        #expect("\(error)".hasSuffix(" of 24,000,000 bytes were sent"), "\(error)")
    }

    // MARK: - put and s3-post

    /// Every attempt answered early: the file fails after `max_attempts`, naming the counts; nothing is stored and
    /// the callback after the upload is never made.
    @Test func putAnsweredEarlyFailsAfterItsAttempts() throws {
        let backend = try FixtureBackend(faults: Self.early("PUT", "/signed/", times: 100))
        let folder = try TemporaryFolder("early-put")
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/ann/big.mov", size: 24_000_000)
        let pipeline = UploadPipelineTests.hockeyPipeline(backend.base, extra: ", max_attempts: 2, as: stored")
        let (result, report) = try run(pipeline, in: folder)
        #expect(result.status == 1)
        #expect(report["status"] as? String == "failed")
        let said = message(report)
        #expect(said.contains(": the server answered 200 after "), "\(said)")
        #expect(said.contains(" of 24,000,000 bytes were sent (after 2 attempts)"), "\(said)")
        #expect(try backend.requests().filter { $0[0] as? String == "PUT" }.count == 2)
        #expect(try backend.objects().isEmpty)
        #expect(try backend.counts("callbacks").isEmpty)
    }

    /// Answered early once, the PUT is sent again whole: `stored.bytes` is the file's size, the object and the
    /// journal's SHA-256 are the file's.
    @Test func putAnsweredEarlyOnceIsSentAgainWhole() throws {
        let backend = try FixtureBackend(faults: Self.early("PUT", "/signed/", times: 1))
        let folder = try TemporaryFolder("early-put-retry")
        defer { folder.remove() }
        let path = try writeRandomFile(folder.path + "/in/ann/big.mov", size: 24_000_000, seed: 3)
        let pipeline = UploadPipelineTests.hockeyPipeline(backend.base, extra: ", as: stored")
        let (result, report) = try run(pipeline, in: folder)
        #expect(result.status == 0, "\(report)")
        let stored = (report["facts"] as? [String: Any])?["stored"] as? [String: Any]
        #expect(stored?["bytes"] as? Int == 24_000_000, "\(report)")
        let puts = try backend.requests().filter { $0[0] as? String == "PUT" }
        #expect(puts.count == 2, "\(puts)")
        let objects = try backend.objects()
        let sha256 = try sha256sum(path)
        #expect(objects.count == 1 && objects.values.first?["sha256"] as? String == sha256, "\(objects)")
        let journal = try SQLiteJournal(path: folder.path + "/.ingest/journal.sqlite", writer: false, create: false)
        let record = try #require(
            try journal.record(root: JournalRecord.canonicalRoot(folder.path + "/in"), relativePath: "ann/big.mov"))
        #expect(record.sha256 == (try journalIdentity(path)))
    }

    /// An S3 presigned POST answered 204 after 100 bytes of the form fails like a PUT.
    @Test func s3PostAnsweredEarlyFails() throws {
        let backend = try FixtureBackend(faults: Self.early("POST", "/s3post/", status: 204, times: 100))
        let folder = try TemporaryFolder("early-post")
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/ann/big.mov", size: 24_000_000)
        let pipeline = """
            version: 1
            name: early-post
            stages:
              - upload: { method: s3-post, url: "\(backend.base)/s3post/bucket", fields: { key: "up/{{file.name}}" }, backoff: 50ms, max_attempts: 2, as: stored }

            """
        let (result, report) = try run(pipeline, in: folder)
        #expect(result.status == 1, "\(result.stderr)")
        let said = message(report)
        #expect(said.hasPrefix("POST "), "\(said)")
        #expect(said.contains(": the server answered 204 after "), "\(said)")
        // The form's fields and closing boundary ride with the file: the body is a little longer than it.
        #expect(said.contains(" bytes were sent (after 2 attempts)"), "\(said)")
        #expect(try backend.requests().filter { $0[0] as? String == "POST" }.count == 2)
        #expect(try backend.objects().isEmpty)
    }

    // MARK: - s3

    func uploader(_ backend: FixtureBackend, attempts: Int, threshold: Int64? = nil, partSize: Int64 = 5 << 20)
        throws -> S3Uploader
    {
        var options = UploadReliabilityTests().fixtureS3Options(backend)
        options.partSize = ByteSize(bytes: partSize)
        options.multipartThreshold = threshold.map { ByteSize(bytes: $0) }
        var network = NetworkOptions()
        network.maxAttempts = attempts
        network.backoff = DurationValue(seconds: 0.05)
        return try S3Uploader(stage: "upload", options: options, network: network, limiter: nil, environment: [:])
    }

    /// The upload's failure (rule and message), or nil when it passed.
    func failure(_ uploader: S3Uploader, _ path: String) -> (rule: String, message: String)? {
        do {
            _ = try uploader.upload(path: path, key: "k/big.bin", headers: [], contentType: "application/octet-stream")
            return nil
        } catch let error as ItemFailed {
            return error.failures.first.map { ($0.rule.rawValue, $0.message) }
        } catch {
            return ("thrown", "\(error)")
        }
    }

    /// A single PUT answered 200 early — even with the right ETag, as a caching proxy might — fails.
    @Test func s3PutAnsweredEarlyFails() throws {
        let folder = try TemporaryFolder("early-s3")
        defer { folder.remove() }
        let path = try writeRandomFile(folder.path + "/big.bin", size: 24_000_000, seed: 4)
        let backend = try FixtureBackend(faults: Self.early("PUT", "/fixture/", times: 100, etag: try md5sum(path)))
        let failed = failure(try uploader(backend, attempts: 2, threshold: 64 << 20), path)
        #expect(failed?.rule == "network", "\(String(describing: failed))")
        #expect(failed?.message.contains(": the server answered 200 after ") == true, "\(String(describing: failed))")
        #expect(failed?.message.contains(" of 24,000,000 bytes were sent (after 2 attempts)") == true)
        #expect(try backend.objects().isEmpty)
    }

    /// One multipart part answered 200 early is sent again (as after a dropped connection): the object S3
    /// assembles is the whole file.
    @Test func s3PartAnsweredEarlyIsSentAgain() throws {
        let folder = try TemporaryFolder("early-part")
        defer { folder.remove() }
        let path = try writeRandomFile(folder.path + "/big.bin", size: 32 << 20, seed: 5)
        let backend = try FixtureBackend(
            faults: Self.early("PUT", "/fixture/", times: 1, etag: try md5sum(path, bytes: 16 << 20)))
        let s3 = try uploader(backend, attempts: 2, partSize: 16 << 20)
        let result = try s3.upload(path: path, key: "k/big.bin", headers: [], contentType: "application/octet-stream")
        #expect(result.parts == 2)
        let parts = try backend.requests().filter { $0[0] as? String == "PUT" }
        #expect(parts.count == 3, "\(parts)")
        #expect(try backend.objects()["k/big.bin"]?["sha256"] as? String == (try sha256sum(path)))
    }

    /// With one attempt, the part answered early fails the upload, which is aborted.
    @Test func s3PartAnsweredEarlyFailsTheUpload() throws {
        let folder = try TemporaryFolder("early-part-fail")
        defer { folder.remove() }
        let path = try writeRandomFile(folder.path + "/big.bin", size: 32 << 20, seed: 5)
        let backend = try FixtureBackend(
            faults: Self.early("PUT", "/fixture/", times: 1, etag: try md5sum(path, bytes: 16 << 20)))
        let failed = failure(try uploader(backend, attempts: 1, partSize: 16 << 20), path)
        let said = failed?.message ?? "passed"
        #expect(said.hasPrefix("PUT "), "\(said)")
        #expect(said.contains(": the server answered 200 after "), "\(said)")
        #expect(said.contains(" of 16,777,216 bytes were sent (after 1 attempt) (multipart upload aborted)"), "\(said)")
        #expect(try backend.counts("callbacks")["abort"] == 1)
        #expect(try backend.objects().isEmpty)
    }

    /// A 200 without an ETag, or with one that is not the MD5 of the bytes sent, fails a single PUT and a part.
    @Test(arguments: [
        (multipart: false, etag: nil, said: "without an ETag"),
        (multipart: false, etag: "0123456789abcdef0123456789abcdef", said: "not the MD5 of the bytes sent"),
        (multipart: true, etag: "", said: "without an ETag"),
        (multipart: true, etag: "0123456789abcdef0123456789abcdef", said: "not the MD5 of the bytes sent"),
    ])
    func s3AnswerWithoutTheRightETagFails(multipart: Bool, etag: String?, said: String) throws {
        let headers = etag.map { #", "headers": {"ETag": "\"\#($0)\""}"# } ?? ""
        let backend = try FixtureBackend(
            faults:
                #"[{"method": "PUT", "path": "/fixture/", "action": "status", "status": 200, "times": 1\#(headers)}]"#
        )
        let folder = try TemporaryFolder("etag")
        defer { folder.remove() }
        let path = try writeRandomFile(folder.path + "/big.bin", size: multipart ? 11 << 20 : 100_000, seed: 6)
        let failed = failure(try uploader(backend, attempts: 2), path)
        #expect(failed?.rule == "etag", "\(String(describing: failed))")
        #expect(failed?.message.contains(said) == true, "\(String(describing: failed))")
        if multipart {
            #expect(failed?.message.hasPrefix("UploadPart ") == true, "\(String(describing: failed))")
            #expect(try backend.counts("callbacks")["abort"] == 1)
        } else {
            #expect(failed?.message.hasPrefix("PUT ") == true, "\(String(describing: failed))")
        }
    }

    /// An SSE-KMS object's ETag is no MD5 (S3 says so in `x-amz-server-side-encryption`): present, it passes.
    @Test func s3KMSEncryptedObjectsETagIsNotComparedWithTheMD5() throws {
        let backend = try FixtureBackend(
            faults: #"[{"method": "PUT", "path": "/fixture/", "action": "status", "status": 200, "times": 1, "#
                + #""headers": {"ETag": "\"6b1f0cd4e3d5a1c2b7e8f9a0d1c2b3e4\"", "x-amz-server-side-encryption": "aws:kms"}}]"#
        )
        let folder = try TemporaryFolder("etag-kms")
        defer { folder.remove() }
        let path = try writeRandomFile(folder.path + "/small.bin", size: 100_000, seed: 9)
        #expect(failure(try uploader(backend, attempts: 1), path) == nil)
    }

    /// The fixture's honest answers (the MD5 as ETag) pass the check, single PUT and multipart.
    @Test func s3HonestAnswersPass() throws {
        let backend = try FixtureBackend()
        let folder = try TemporaryFolder("etag-ok")
        defer { folder.remove() }
        for size in [100_000, 11 << 20] {
            let path = try writeRandomFile(folder.path + "/f\(size).bin", size: size, seed: 8)
            let result = try uploader(backend, attempts: 1).upload(
                path: path, key: "ok/\(size)", headers: [], contentType: "application/octet-stream")
            #expect(try backend.objects()["ok/\(size)"]?["sha256"] as? String == (try sha256sum(path)))
            if size == 100_000 { #expect(result.etag == (try md5sum(path))) }
        }
    }
}
