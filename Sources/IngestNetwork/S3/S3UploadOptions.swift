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

/// How `S3Uploader` reaches and writes a bucket: what `upload`'s `method: s3` options give it (their spec, the
/// fields and their checks, is `S3Upload.Options` in IngestStages).
package struct S3UploadOptions: Sendable {
    package var bucket: String?
    package var endpoint: String?
    package var pathStyle = false
    package var region: String?
    package var accessKeyID: String?
    package var secretAccessKey: String?
    package var sessionToken: String?
    package var partSize = ByteSize(bytes: 8 << 20)
    package var multipartThreshold: ByteSize?
    package var payloadSigning = S3PayloadSigning.signed
    package var checksum = S3PartChecksum.md5
    package var partConcurrency = 4
    package init() {}

    /// S3's limits: parts of 5 MiB … 5 GiB (the last may be smaller), at most 10,000 of them; one PUT ≤ 5 GiB.
    package static let minimumPartSize: Int64 = 5 << 20
    package static let maximumPartSize: Int64 = 5 << 30
    static let maximumParts: Int64 = 10_000

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
