import Foundation
import Testing

@testable import IngestCore
@testable import IngestTestSupport

/// `-v` on an S3 multipart upload to a real S3 server (SeaweedFS): the create, every part and the complete request
/// each get their line, and neither the secret key nor a signature appears.
@Suite(.serialized) struct VerboseS3Tests {
    @Test func multipartUploadLogsEveryRequest() throws {
        let server = try SeaweedFS.shared()
        let bucket = "ingest-verbose"
        try server.createBucket(bucket)
        let folder = try TemporaryFolder("verbose-s3")
        defer { folder.remove() }
        _ = try writeRandomFile(folder.path + "/in/big.bin", size: 11 << 20, seed: 9)
        let pipeline = try folder.file(
            "p.yml",
            """
            version: 1
            name: crowd
            stages:
              - upload:
                  method: s3
                  endpoint: \(server.endpoint)
                  bucket: \(bucket)
                  access_key_id: ${S3_KEY}
                  secret_access_key: ${S3_SECRET}
                  key: "v-\(UUID().uuidString.prefix(8))/{{file.name}}"
                  part_size: 5MiB

            """)
        var environment = environmentWithoutProxies(["S3_KEY": server.accessKey, "S3_SECRET": server.secretKey])
        for name in ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_PROFILE"] {
            environment[name] = nil
        }
        let result = try runCommand(
            TestPaths.ingest, ["run", pipeline, "in", "--no-journal", "-q", "-vv"], environment: environment,
            directory: folder.path)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let lines = result.stderr.split(separator: "\n").map(String.init).filter { $0.hasPrefix("ingest: upload ") }
        let attempts = lines.filter { $0.contains(" → ") }
        #expect(attempts.count == 5, "create, 3 parts, complete:\n\(result.stderr)")
        #expect(attempts.first?.contains("POST ") == true && attempts.first?.contains("?uploads") == true)
        #expect(attempts.filter { $0.contains("PUT ") && $0.contains("partNumber=") }.count == 3, "\(attempts)")
        #expect(attempts.allSatisfy { $0.contains(" → 200, ") && $0.hasPrefix("ingest: upload in/big.bin: ") })
        #expect(result.stderr.contains("< ETag: "), "-vv shows the response headers: \(result.stderr)")
        #expect(!result.stderr.contains(server.secretKey))
        #expect(!result.stderr.lowercased().contains("signature="), "\(result.stderr)")
    }
}
