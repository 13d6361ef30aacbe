import Foundation
import IngestCore

/// Everything that can go wrong while signing S3/AWS requests or building and reading POST policies. Closed on
/// purpose (as swift-crypto's error enums are): each case carries what is needed to say what is wrong and how to
/// fix it, and never a secret.
package enum S3Error: Error, Equatable, Sendable, CustomStringConvertible {
    /// Credentials or region are not in the environment; the associated values name the variables to set.
    case missingEnvironment([String])
    /// An `s3://BUCKET/KEY` argument that is not one.
    case invalidLocation(String, reason: String)
    /// An endpoint that is not `http(s)://host[:port]`.
    case invalidEndpoint(String, reason: String)
    /// A URL the signer cannot take apart.
    case invalidURL(String)
    /// A signing time that is not `YYYYMMDDTHHMMSSZ`.
    case invalidDate(String)
    /// Presigned URLs live 1 second to 7 days (S3's limit).
    case invalidExpiry(Int)
    /// A POST policy (or a ticket's `upload_fields`) that cannot be read or built.
    case invalidPolicy(String)

    package var description: String {
        switch self {
        case .missingEnvironment(let names):
            if names == ["AWS_REGION"] { return "missing AWS region: set AWS_REGION (or pass --region)" }
            let list = names.count == 1 ? names[0] : names.dropLast().joined(separator: ", ") + " and " + names.last!
            return "missing AWS credentials: set \(list) (and AWS_SESSION_TOKEN for temporary credentials)"
        case .invalidLocation(let text, let reason):
            return "'\(text)' is not an S3 location (expected s3://BUCKET/KEY): \(reason)"
        case .invalidEndpoint(let text, let reason):
            return "'\(text)' is not an S3 endpoint (expected http(s)://host[:port]): \(reason)"
        case .invalidURL(let text):
            return "'\(Redaction.url(text))' is not an absolute http(s) URL"
        case .invalidDate(let text):
            return "'\(text)' is not a signing time (expected YYYYMMDDTHHMMSSZ, e.g. 20241219T143022Z)"
        case .invalidExpiry(let seconds):
            return "expiry of \(seconds) seconds is out of range (S3 allows 1 to 604800 seconds, 7 days)"
        case .invalidPolicy(let reason):
            return "invalid S3 POST policy: \(reason)"
        }
    }
}
