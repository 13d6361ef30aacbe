import Foundation
import Testing

@testable import Ingest
@testable import IngestNetwork

/// Issue 22 §5: `checksum: crc64nvme | crc32c | crc32 | sha256` on a single PUT and a multipart upload (FULL_OBJECT
/// CRC, COMPOSITE SHA-256). SeaweedFS verifies every `x-amz-checksum-*` header (a wrong one is refused with
/// BadDigest) and returns the value, the whole object's too; moto's S3 server accepts and ignores them, and `-v`
/// then says the checksum was not verified instead of claiming it was.
@Suite(.serialized) struct S3ChecksumTests {
    let bucket = "ingest-checksums"

    func pipeline(endpoint: String, checksum: String, key: String, access: String, secret: String) -> String {
        """
        version: 1
        name: checksums
        stages:
          - upload:
              method: s3
              endpoint: \(endpoint)
              bucket: \(bucket)
              access_key_id: \(access)
              secret_access_key: "\(secret)"
              key: "\(key)/{{file.name}}"
              part_size: 5MiB
              checksum: \(checksum)
              backoff: 50ms

        """
    }

    /// `ingest run -v --no-journal` of a 1 MB file (one PUT) and an 11 MiB file (three parts); returns stderr.
    func runVerbose(_ folder: TemporaryFolder, endpoint: String, checksum: String, key: String, secret: String)
        throws -> CommandResult
    {
        _ = try writeRandomFile(folder.path + "/in/small.bin", size: 1_000_000, seed: 41)
        _ = try writeRandomFile(folder.path + "/in/big.bin", size: 11 << 20, seed: 42)
        let file = try folder.file(
            "p.yml", pipeline(endpoint: endpoint, checksum: checksum, key: key, access: "AKIDCHECK", secret: secret))
        var environment = environmentWithoutProxies([:])
        for name in ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_PROFILE"] {
            environment[name] = nil
        }
        return try runCommand(
            TestPaths.ingest, ["run", file, "in", "--no-journal", "-q", "-v"], environment: environment,
            directory: folder.path)
    }

    @Test(arguments: ["crc64nvme", "crc32c", "crc32", "sha256"]) func seaweedFSVerifiesAndReturnsTheChecksum(
        checksum: String
    ) throws {
        let server = try SeaweedFS.shared()
        try server.createBucket(bucket)
        let folder = try TemporaryFolder("s3-checksum")
        defer { folder.remove() }
        let key = "\(checksum)-\(UUID().uuidString.prefix(6))"
        let file = try folder.file(
            "p.yml",
            pipeline(
                endpoint: server.endpoint, checksum: checksum, key: key, access: server.accessKey,
                secret: server.secretKey))
        _ = try writeRandomFile(folder.path + "/in/small.bin", size: 1_000_000, seed: 41)
        let big = try writeRandomFile(folder.path + "/in/big.bin", size: 11 << 20, seed: 42)
        let result = try runCommand(
            TestPaths.ingest, ["run", file, "in", "--no-journal", "-q", "-v"],
            environment: environmentWithoutProxies([:]), directory: folder.path)
        #expect(result.status == 0, "\(result.stderr)")
        let header = "x-amz-checksum-\(checksum)"
        #expect(
            result.stderr.contains("PUT \(server.endpoint)/\(bucket)/\(key)/small.bin: the store verified \(header)"))
        #expect(
            result.stderr.contains(
                "CompleteMultipartUpload \(server.endpoint)/\(bucket)/\(key)/big.bin: the store verified \(header)"),
            "\(result.stderr)")
        #expect(!result.stderr.contains("not verified"))
        // The whole object's CRC-32 as S3 keeps it equals zlib's over the whole file (python3, not the code here).
        let head = try server.curl([
            "-s", "-I", "-H", "x-amz-checksum-mode: ENABLED", "\(server.endpoint)/\(bucket)/\(key)/big.bin",
        ])
        if checksum == "crc32" {
            let zlib = try runCommand(
                "/usr/bin/env",
                [
                    "python3", "-c",
                    "import base64, sys, zlib; print(base64.b64encode(zlib.crc32(open(sys.argv[1], 'rb').read()).to_bytes(4, 'big')).decode())",
                    big,
                ])
            #expect(
                head.body.lowercased().contains(
                    "x-amz-checksum-crc32: \(zlib.stdout.trimmingCharacters(in: .whitespacesAndNewlines).lowercased())"),
                "\(head.body)")
        }
        #expect(head.body.lowercased().contains(header), "\(head.body)")
    }

    /// A checksum that is not the one of the bytes sent is refused by SeaweedFS: on a PUT and on a part (and the
    /// multipart upload is then aborted).
    @Test(arguments: [3 << 20, 11 << 20]) func seaweedFSRefusesAWrongChecksum(size: Int) throws {
        let server = try SeaweedFS.shared()
        try server.createBucket(bucket)
        let folder = try TemporaryFolder("s3-checksum-wrong")
        defer { folder.remove() }
        let input = try writeRandomFile(folder.path + "/wrong.bin", size: size, seed: 43)
        var options = S3UploadOptions()
        options.bucket = bucket
        options.endpoint = server.endpoint
        options.accessKeyID = server.accessKey
        options.secretAccessKey = server.secretKey
        options.partSize = ByteSize(bytes: 5 << 20)
        options.checksum = .crc64nvme
        var uploader = try S3Uploader(
            stage: "upload", options: options, network: NetworkOptions(), limiter: nil, environment: [:])
        uploader.alterChecksum = { _ in "AAAAAAAAAAA=" }
        let key = "wrong-\(UUID().uuidString.prefix(8))/wrong.bin"
        let error = #expect(throws: ItemFailed.self) {
            try uploader.upload(path: input, key: key, headers: [], contentType: "application/octet-stream")
        }
        let failure = try #require(error?.failures.first)
        #expect(failure.message.contains("400") && failure.message.contains("BadDigest"), "\(failure)")
        #expect(try server.curl(["-s", "-I", "\(server.endpoint)/\(bucket)/\(key)"]).status == 404)
    }

    /// moto accepts a wrong checksum and returns none: `-v` says the checksum was not verified, never "verified".
    @Test func aStoreThatIgnoresTheHeaderIsNotClaimedToHaveVerifiedIt() throws {
        let moto = try MotoS3()
        try moto.createBucket(bucket)
        let folder = try TemporaryFolder("s3-checksum-moto")
        defer { folder.remove() }
        let result = try runVerbose(folder, endpoint: moto.endpoint, checksum: "crc64nvme", key: "m", secret: "s")
        #expect(result.status == 0, "\(result.stderr)")
        let notVerified = "x-amz-checksum-crc64nvme not verified: the store returned no CRC64NVME checksum"
        #expect(
            result.stderr.contains("PUT \(moto.endpoint)/\(bucket)/m/small.bin: \(notVerified)"), "\(result.stderr)")
        #expect(
            result.stderr.contains("CompleteMultipartUpload \(moto.endpoint)/\(bucket)/m/big.bin: \(notVerified)"),
            "\(result.stderr)")
        #expect(!result.stderr.contains("the store verified"), "\(result.stderr)")
    }
}
