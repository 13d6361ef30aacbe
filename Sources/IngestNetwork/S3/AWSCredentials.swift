import Foundation
import IngestCore

/// An AWS access key pair (and session token for temporary credentials). `description`, `debugDescription` and the
/// mirror all hide the secret and the token, so printing, interpolating or `dump`-ing credentials never leaks them.
public struct AWSCredentials: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    package let accessKeyID: String
    package let secretAccessKey: String
    package let sessionToken: String?

    /// Credentials as given; `sessionToken` for temporary ones (STS).
    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Reads `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and the optional `AWS_SESSION_TOKEN`. Empty values count
    /// as missing; the error names every variable that is.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> AWSCredentials {
        func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        let keyID = value("AWS_ACCESS_KEY_ID")
        let secret = value("AWS_SECRET_ACCESS_KEY")
        guard let keyID, let secret else {
            throw S3Error.missingEnvironment(
                [keyID == nil ? "AWS_ACCESS_KEY_ID" : nil, secret == nil ? "AWS_SECRET_ACCESS_KEY" : nil]
                    .compactMap { $0 })
        }
        return AWSCredentials(accessKeyID: keyID, secretAccessKey: secret, sessionToken: value("AWS_SESSION_TOKEN"))
    }

    /// `AWS_REGION`, else `AWS_DEFAULT_REGION` (what the AWS CLI reads), else an error naming `AWS_REGION`.
    package static func region(
        from environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> String {
        for name in ["AWS_REGION", "AWS_DEFAULT_REGION"] {
            if let region = environment[name], !region.isEmpty { return region }
        }
        throw S3Error.missingEnvironment(["AWS_REGION"])
    }

    /// The key ID only: the secret never appears in output.
    public var description: String {
        "AWSCredentials(accessKeyID: \(accessKeyID), secretAccessKey: \(Redaction.placeholder), sessionToken: "
            + (sessionToken == nil ? "none" : Redaction.placeholder) + ")"
    }
    /// As `description`.
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "accessKeyID": accessKeyID, "secretAccessKey": Redaction.placeholder,
                "sessionToken": sessionToken == nil ? "none" : Redaction.placeholder,
            ])
    }
}
