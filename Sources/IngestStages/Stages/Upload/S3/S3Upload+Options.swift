import Foundation
import IngestCore
import IngestNetwork
import IngestTemplates

extension S3Upload {
    /// The options of `method: s3`: where the object goes (`bucket`, `key`, the store and its credentials), how it
    /// is sent (parts, signing, checksums) and what it carries (`metadata`, `headers`, `content_type`).
    struct Options: StageOptions, Sendable {
        var key: Template?
        var headers = HeaderTemplates()
        var contentType: Template?
        var metadata = HeaderTemplates()
        var client = S3UploadOptions()
        var network = NetworkOptions()
        init() {}

        static var fields: [OptionField<Options>] {
            [
                OptionField("bucket", \.client.bucket, doc: "The bucket to upload into.", required: true),
                UploadFields.key(\.key, doc: "Object key"),
                UploadFields.headers(\.headers),
                UploadFields.contentType(\.contentType),
            ] + storeFields + [
                OptionField(
                    "metadata", \.metadata,
                    doc: "User metadata templates, sent as `x-amz-meta-<name>` headers (`geohash: \"{{geohash}}\"`).",
                    default: "{}")
            ] + transferFields + UploadFields.network(\.network)
        }

        /// Where the store is and whose keys sign for it.
        private static var storeFields: [OptionField<Options>] {
            [
                OptionField(
                    "endpoint", \.client.endpoint,
                    doc: "`http(s)://host[:port]` of an S3-compatible store (MinIO, SeaweedFS, R2 …) instead of AWS.",
                    default: "https://s3.<region>.amazonaws.com"),
                OptionField(
                    "path_style", \.client.pathStyle,
                    doc: "Address the bucket in the path (`host/bucket/key`) instead of the host name.",
                    default: "false (true for IP addresses and localhost)"),
                OptionField(
                    "region", \.client.region, doc: "The region requests are signed for.",
                    default: "AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1 when endpoint is given"),
                OptionField(
                    "access_key_id", \.client.accessKeyID,
                    doc:
                        "Access key ID (normally `${VAR}`); with `secret_access_key`, used instead of the environment.",
                    default: "AWS_ACCESS_KEY_ID"),
                OptionField(
                    "secret_access_key", \.client.secretAccessKey,
                    doc: "Secret access key (normally `${VAR}`; never printed).", default: "AWS_SECRET_ACCESS_KEY"),
                OptionField(
                    "session_token", \.client.sessionToken,
                    doc: "Session token of temporary credentials that go with `access_key_id`.",
                    default: "AWS_SESSION_TOKEN with the environment's keys"),
            ]
        }

        /// How the bytes go: one PUT or parts, how they are signed and checked, how many at once.
        private static var transferFields: [OptionField<Options>] {
            [
                OptionField(
                    "part_size", \.client.partSize,
                    doc:
                        "Multipart part size, 5MiB–5GiB; raised (to whole MiB) when a file would need more than "
                        + "10,000 parts.",
                    default: "8MiB"),
                OptionField(
                    "multipart_threshold", \.client.multipartThreshold,
                    doc: "Files larger than this go by multipart upload; smaller ones as one PUT (at most 5GiB).",
                    default: "part_size"),
                OptionField(
                    "payload_signing", \.client.payloadSigning,
                    doc:
                        "`signed` (the body's SHA-256 is signed, hashed by streaming first) or `unsigned` "
                        + "(UNSIGNED-PAYLOAD).",
                    default: "signed"),
                OptionField(
                    "checksum", \.client.checksum,
                    doc:
                        "The checksum S3 verifies: `md5` (Content-MD5 on parts, the ETag of a PUT), `sha256`, "
                        + "`crc64nvme`, `crc32c` or `crc32` (x-amz-checksum-*; multipart: the whole object's CRC too).",
                    default: "md5"),
                OptionField(
                    "part_concurrency", \.client.partConcurrency, range: 1...16,
                    doc:
                        "Multipart parts in flight at once (1–16), each read, hashed and sent by a thread of its own: "
                        + "one part's hashing overlaps another's transfer, and the store works on several at once.",
                    default: "4"),
            ]
        }

        func validate(at node: ConfigNode) throws {
            try network.validate(at: node)
            let bucket = client.bucket ?? ""
            do {
                _ = try S3Location(parsing: "s3://\(bucket)/")
            } catch let error as S3Error {
                throw node.error("bucket: \(error)")
            }
            if let endpoint = client.endpoint {
                do { _ = try S3Endpoint(region: "us-east-1", url: endpoint) } catch {
                    throw node.error("endpoint: \(error)")
                }
            }
            if (client.accessKeyID == nil) != (client.secretAccessKey == nil) {
                throw node.error(
                    "give both 'access_key_id' and 'secret_access_key', or neither (to use the environment)")
            }
            let parts = S3UploadOptions.minimumPartSize...S3UploadOptions.maximumPartSize
            if !parts.contains(client.partSize.bytes) {
                throw node.error("part_size must be between 5MiB and 5GiB (S3's limits), found \(client.partSize)")
            }
            if let threshold = client.multipartThreshold, threshold.bytes > S3UploadOptions.maximumPartSize {
                throw node.error(
                    "multipart_threshold must be at most 5GiB (S3's limit for one PUT), found \(threshold)")
            }
        }
    }
}
