import Foundation
import IngestCore
import IngestTemplates

/// How an `s3` upload's body is signed.
package enum S3PayloadSigning: String, OptionEnum, Sendable {
    /// `x-amz-content-sha256` is the body's SHA-256 (the file is hashed by streaming before it is sent).
    case signed
    /// `UNSIGNED-PAYLOAD` (one read of the file instead of two; TLS and the part checksums still guard the bytes).
    case unsigned
}

/// The checksum an upload carries for S3 to verify before it stores the bytes (see `S3Checksum.swift`).
package enum S3PartChecksum: String, OptionEnum, Sendable {
    /// `Content-MD5` on each part (every S3-compatible store checks it); a single PUT checks the ETag's MD5.
    case md5
    /// `x-amz-checksum-sha256` (multipart: COMPOSITE, each part's SHA-256).
    case sha256
    /// `x-amz-checksum-crc64nvme` (aws-cli v2's default); multipart: FULL_OBJECT, the whole object's CRC too.
    case crc64nvme
    /// `x-amz-checksum-crc32c`; multipart: FULL_OBJECT.
    case crc32c
    /// `x-amz-checksum-crc32`; multipart: FULL_OBJECT.
    case crc32
}

/// The `upload` options of `method: s3`: a direct, SigV4-signed upload into a bucket the user owns.
package struct S3UploadOptions: Sendable {
    package var bucket: String?
    package var endpoint: String?
    package var pathStyle = false
    package var region: String?
    package var accessKeyID: String?
    package var secretAccessKey: String?
    package var sessionToken: String?
    package var metadata = HeaderTemplates()
    package var partSize = ByteSize(bytes: 8 << 20)
    package var multipartThreshold: ByteSize?
    package var payloadSigning = S3PayloadSigning.signed
    package var checksum = S3PartChecksum.md5
    package var partConcurrency = 4
    package init() {}

    /// S3's limits: parts of 5 MiB … 5 GiB (the last may be smaller), at most 10,000 of them; one PUT ≤ 5 GiB.
    static let minimumPartSize: Int64 = 5 << 20
    static let maximumPartSize: Int64 = 5 << 30
    static let maximumParts: Int64 = 10_000

    package static func fields<Root>(_ path: WritableKeyPath<Root, S3UploadOptions>) -> [OptionField<Root>] {
        [
            OptionField("bucket", path.appending(path: \.bucket), doc: "s3: the bucket to upload into."),
            OptionField(
                "endpoint", path.appending(path: \.endpoint),
                doc: "s3: `http(s)://host[:port]` of an S3-compatible store (MinIO, SeaweedFS, R2 …) instead of AWS.",
                default: "https://s3.<region>.amazonaws.com"),
            OptionField(
                "path_style", path.appending(path: \.pathStyle),
                doc: "s3: address the bucket in the path (`host/bucket/key`) instead of the host name.",
                default: "false (true for IP addresses and localhost)"),
            OptionField(
                "region", path.appending(path: \.region), doc: "s3: the region requests are signed for.",
                default: "AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1 when endpoint is given"),
            OptionField(
                "access_key_id", path.appending(path: \.accessKeyID),
                doc:
                    "s3: access key ID (normally `${VAR}`); with `secret_access_key`, used instead of the environment.",
                default: "AWS_ACCESS_KEY_ID"),
            OptionField(
                "secret_access_key", path.appending(path: \.secretAccessKey),
                doc: "s3: secret access key (normally `${VAR}`; never printed).", default: "AWS_SECRET_ACCESS_KEY"),
            OptionField(
                "session_token", path.appending(path: \.sessionToken),
                doc: "s3: session token of temporary credentials that go with `access_key_id`.",
                default: "AWS_SESSION_TOKEN with the environment's keys"),
            OptionField(
                "metadata", path.appending(path: \.metadata),
                doc:
                    "s3: user metadata templates, sent as `x-amz-meta-<name>` headers (`geohash: \"{{geohash}}\"`); "
                    + "tus: `Upload-Metadata` entries beside filename and filetype.",
                default: "{}"),
            OptionField(
                "part_size", path.appending(path: \.partSize),
                doc:
                    "s3: multipart part size, 5MiB–5GiB; raised (to whole MiB) when a file would need more than 10,000 parts.",
                default: "8MiB"),
            OptionField(
                "multipart_threshold", path.appending(path: \.multipartThreshold),
                doc: "s3: files larger than this go by multipart upload; smaller ones as one PUT (at most 5GiB).",
                default: "part_size"),
            OptionField(
                "payload_signing", path.appending(path: \.payloadSigning),
                doc:
                    "s3: `signed` (the body's SHA-256 is signed, hashed by streaming first) or `unsigned` (UNSIGNED-PAYLOAD).",
                default: "signed"),
            OptionField(
                "checksum", path.appending(path: \.checksum),
                doc:
                    "s3: the checksum S3 verifies: `md5` (Content-MD5 on parts, the ETag of a PUT), `sha256`, "
                    + "`crc64nvme`, `crc32c` or `crc32` (x-amz-checksum-*; multipart: the whole object's CRC too).",
                default: "md5"),
            OptionField(
                "part_concurrency", path.appending(path: \.partConcurrency), range: 1...16,
                doc:
                    "s3: multipart parts in flight at once (1–16), each read, hashed and sent by a thread of its own: "
                    + "one part's hashing overlaps another's transfer, and the store works on several at once.",
                default: "4"),
        ]
    }

    /// The options that only `method: s3` reads (named in the error when another method has them).
    package var givenNames: [String] {
        var names: [String] = []
        if bucket != nil { names.append("bucket") }
        if endpoint != nil { names.append("endpoint") }
        if region != nil { names.append("region") }
        if accessKeyID != nil { names.append("access_key_id") }
        if secretAccessKey != nil { names.append("secret_access_key") }
        if !metadata.entries.isEmpty { names.append("metadata") }
        if multipartThreshold != nil { names.append("multipart_threshold") }
        if partConcurrency != 4 { names.append("part_concurrency") }
        return names
    }

    package func validate(at node: ConfigNode) throws {
        guard let bucket else { throw node.error("method s3 needs 'bucket'") }
        do {
            _ = try S3Location(parsing: "s3://\(bucket)/")
        } catch let error as S3Error {
            throw node.error("bucket: \(error)")
        }
        if let endpoint {
            do { _ = try S3Endpoint(region: "us-east-1", url: endpoint) } catch {
                throw node.error("endpoint: \(error)")
            }
        }
        if (accessKeyID == nil) != (secretAccessKey == nil) {
            throw node.error("give both 'access_key_id' and 'secret_access_key', or neither (to use the environment)")
        }
        if partSize.bytes < Self.minimumPartSize || partSize.bytes > Self.maximumPartSize {
            throw node.error("part_size must be between 5MiB and 5GiB (S3's limits), found \(partSize)")
        }
        if let threshold = multipartThreshold, threshold.bytes > Self.maximumPartSize {
            throw node.error("multipart_threshold must be at most 5GiB (S3's limit for one PUT), found \(threshold)")
        }
        if !(1...16).contains(partConcurrency) {
            throw node.error("part_concurrency must be between 1 and 16, found \(partConcurrency)")
        }
    }

    /// Credentials and region from the pipeline, else the environment; the error names what to set.
    func resolve(environment: [String: String]) throws -> (AWSCredentials, String) {
        let credentials: AWSCredentials
        if let accessKeyID, let secretAccessKey {
            let missing = [
                accessKeyID.isEmpty ? "access_key_id" : nil, secretAccessKey.isEmpty ? "secret_access_key" : nil,
            ]
            .compactMap { $0 }
            guard missing.isEmpty else {
                throw S3UploadConfigurationError(
                    message: "missing AWS credentials: \(missing.joined(separator: " and ")) rendered empty")
            }
            credentials = AWSCredentials(
                accessKeyID: accessKeyID, secretAccessKey: secretAccessKey,
                sessionToken: sessionToken)  // the environment's token belongs to the environment's keys
        } else {
            do {
                credentials = try AWSCredentials.fromEnvironment(environment)
            } catch let error as S3Error {
                throw S3UploadConfigurationError(
                    message: "\(error), or give access_key_id and secret_access_key in the pipeline")
            }
            if let sessionToken, !sessionToken.isEmpty {
                return (
                    AWSCredentials(
                        accessKeyID: credentials.accessKeyID, secretAccessKey: credentials.secretAccessKey,
                        sessionToken: sessionToken), try resolveRegion(environment)
                )
            }
        }
        return (credentials, try resolveRegion(environment))
    }

    private func resolveRegion(_ environment: [String: String]) throws -> String {
        if let region, !region.isEmpty { return region }
        if let found = try? AWSCredentials.region(from: environment) { return found }
        if endpoint != nil { return "us-east-1" }
        throw S3UploadConfigurationError(
            message: "missing AWS region: set AWS_REGION (or AWS_DEFAULT_REGION), or give 'region'")
    }
}

/// A configuration problem found when the stage is built (the pipeline fails to load, nothing is uploaded).
package struct S3UploadConfigurationError: Error, CustomStringConvertible {
    package var message: String
    package var description: String { message }

    package init(message: String) { self.message = message }
}
