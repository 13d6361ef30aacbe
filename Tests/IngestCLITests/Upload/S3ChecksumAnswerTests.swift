import Foundation
import Testing

@testable import IngestCore
@testable import IngestTestSupport

/// Issue 22 §5, "check the checksum S3 returns": SeaweedFS stores the object and answers with its checksum, and a
/// proxy (`backend.py --upstream`, action `tamper`, Tests/Fixtures/tampered_answers.py) replaces that checksum on
/// the way back, as a store holding other bytes than were sent would answer. The file fails with rule `checksum`,
/// naming both values; it is never reported as verified.
@Suite(.serialized) struct S3ChecksumAnswerTests {
    let bucket = "ingest-checksums"

    @Test func aChecksumS3ReturnsThatDiffersFailsTheFile() throws {
        let server = try SeaweedFS.shared()
        try server.createBucket(bucket)
        let prefix = "tampered-\(UUID().uuidString.prefix(6))"
        // The PUT's x-amz-checksum-crc32c header, and CompleteMultipartUpload's ChecksumCRC32C element (its
        // CreateMultipartUpload, a POST too, has none and passes unchanged).
        let proxy = try FixtureBackend(
            faults: """
                [{"method": "PUT", "path": "/\(bucket)/\(prefix)/small.bin", "action": "tamper",
                  "header": "x-amz-checksum-crc32c", "value": "AAAAAA==", "times": 10},
                 {"method": "POST", "path": "/\(bucket)/\(prefix)/big.bin", "action": "tamper",
                  "element": "ChecksumCRC32C", "value": "AAAAAA==", "times": 10}]
                """, upstream: server.endpoint)
        defer { proxy.stop() }
        let folder = try TemporaryFolder("s3-checksum-answer")
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/small.bin", size: 1_000_000, seed: 71)
        try writeRandomFile(folder.path + "/in/big.bin", size: 11 << 20, seed: 72)
        let pipeline = try folder.file(
            "p.yml",
            """
            version: 1
            name: checksum-answers
            stages:
              - upload:
                  method: s3
                  endpoint: \(proxy.base)
                  bucket: \(bucket)
                  access_key_id: ${S3_KEY}
                  secret_access_key: ${S3_SECRET}
                  key: "\(prefix)/{{file.name}}"
                  part_size: 5MiB
                  checksum: crc32c
                  backoff: 50ms

            """)
        let environment = environmentWithoutProxies(["S3_KEY": server.accessKey, "S3_SECRET": server.secretKey])
        let (result, reports) = try runIngestWithReport(
            pipeline, ["in", "--no-journal"], in: folder.path, environment: environment)
        #expect(result.status == 1, "\(result.stderr)")
        var failures: [String: [String: Any]] = [:]
        for report in reports {
            let path = try #require(report["path"] as? String)
            failures[(path as NSString).lastPathComponent] = (report["failures"] as? [[String: Any]])?.first
        }
        for (name, request) in [("small.bin", "PUT"), ("big.bin", "CompleteMultipartUpload")] {
            let failure = try #require(failures[name], "\(name) did not fail: \(reports)")
            let message = failure["message"] as? String ?? ""
            #expect(failure["rule"] as? String == "checksum", "\(failure)")
            #expect(message.hasPrefix("\(request) \(proxy.base)/\(bucket)/\(prefix)/\(name)"), "\(message)")
            #expect(message.contains("answered with x-amz-checksum-crc32c AAAAAA==, not "), "\(message)")
            #expect(failure["actual"] as? String == "AAAAAA==", "\(failure)")
            #expect((failure["expected"] as? String)?.count == 8, "\(failure)")  // base64 of a CRC-32C
        }
    }
}
