import Foundation
import IngestCore

/// `s3://BUCKET/KEY`. The key is kept exactly as written (S3 keys are not paths: `a//b` and `a/./b` are distinct).
public struct S3Location: Sendable, Equatable, CustomStringConvertible {
    /// The bucket.
    public var bucket: String
    /// The object key, unencoded.
    public var key: String

    /// An object by bucket and key.
    public init(bucket: String, key: String) {
        self.bucket = bucket
        self.key = key
    }

    /// Parses `s3://bucket/key`; throws `S3Error` for another scheme or an invalid bucket name.
    public init(parsing text: String) throws {
        guard text.hasPrefix("s3://") else {
            throw S3Error.invalidLocation(text, reason: "it does not start with s3://")
        }
        let rest = text.dropFirst(5)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let bucket = String(rest[..<slash])
        guard !bucket.isEmpty else { throw S3Error.invalidLocation(text, reason: "the bucket name is empty") }
        // S3's bucket naming rules: 3–63 of a-z 0-9 . -, starting and ending with a letter or digit.
        let allowed = bucket.utf8.allSatisfy {
            ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-")
        }
        guard allowed, (3...63).contains(bucket.count), bucket.first!.isLetter || bucket.first!.isNumber,
            bucket.last!.isLetter || bucket.last!.isNumber
        else {
            throw S3Error.invalidLocation(
                text, reason: "bucket '\(bucket)' is not a valid name (3–63 of a-z, 0-9, '.', '-')")
        }
        self.bucket = bucket
        self.key = slash == rest.endIndex ? "" : String(rest[rest.index(after: slash)...])
    }

    /// `s3://bucket/key`.
    public var description: String { "s3://\(bucket)/\(key)" }
}

/// Where S3 requests go: AWS's regional endpoint, or a compatible server (MinIO, SeaweedFS, R2 …) given as
/// `http(s)://host[:port]`.
public struct S3Endpoint: Sendable, Equatable {
    package var scheme: String
    /// `host[:port]` as the `Host` header carries it (default ports left out).
    package var host: String
    /// Bucket in the path (`host/bucket/key`) instead of the host name (`bucket.host/key`).
    package var pathStyle: Bool

    /// `url` nil means `https://s3.<region>.amazonaws.com`.
    public init(region: String, url: String? = nil, pathStyle: Bool = false) throws {
        guard let url else {
            self.init(scheme: "https", host: "s3.\(region).amazonaws.com", pathStyle: pathStyle)
            return
        }
        let parts: (scheme: String, host: String, path: String, query: String)
        do { parts = try SigV4Request.split(url) } catch {
            throw S3Error.invalidEndpoint(url, reason: "it is not an absolute http(s) URL")
        }
        guard parts.path == "/", parts.query.isEmpty else {
            throw S3Error.invalidEndpoint(url, reason: "it has a path or query; give only scheme, host and port")
        }
        self.init(scheme: parts.scheme, host: parts.host, pathStyle: pathStyle)
    }

    package init(scheme: String, host: String, pathStyle: Bool) {
        self.scheme = scheme
        self.host = host
        self.pathStyle = pathStyle
    }

    /// Virtual-hosted addressing cannot work for an IP address or `localhost`, nor for a dotted bucket over HTTPS
    /// (the wildcard certificate does not cover it); those use path style, as the AWS SDKs do.
    package func usesPathStyle(bucket: String) -> Bool {
        if pathStyle { return true }
        let name = host.split(separator: ":").first.map(String.init) ?? host
        let isIP =
            name.hasPrefix("[") || name.split(separator: ".").count == 4 && name.allSatisfy { $0.isNumber || $0 == "." }
        return isIP || name == "localhost" || (scheme == "https" && bucket.contains("."))
    }

    /// The bucket's URL, ending in `/` (where presigned POST forms go).
    package func bucketURL(_ bucket: String) -> String {
        usesPathStyle(bucket: bucket) ? "\(scheme)://\(host)/\(bucket)/" : "\(scheme)://\(bucket).\(host)/"
    }

    /// The object's URL with the key URI-encoded once (every byte but unreserved characters and `/`).
    package func objectURL(_ location: S3Location) -> String {
        bucketURL(location.bucket) + AWSURI.encode(location.key, keepSlash: true)
    }
}

/// A browser-style POST upload: send `fields` (in order) and then the file as `multipart/form-data` to `url`.
package struct S3PresignedPost: Sendable {
    package var url: String
    package var fields: [(String, String)]
    package var policy: S3PostPolicy

    /// `{"url": …, "fields": {…}}`, fields in order, as `ingest presign post` prints it.
    package var json: JSONValue {
        var object = JSONObject()
        for (name, value) in fields { object[name] = .string(value) }
        return ["url": .string(url), "fields": .object(object)]
    }
}

/// Makes presigned S3 URLs and POST forms. Nothing here talks to the network: signing is local, which is why
/// `--date` can make the output reproducible.
public struct S3Presigner: Sendable {
    package var signer: SigV4Signer
    package var endpoint: S3Endpoint

    /// A presigner for `region` at `endpoint` (AWS, or an S3-compatible server).
    public init(credentials: AWSCredentials, region: String, endpoint: S3Endpoint) {
        self.signer = .s3(credentials: credentials, region: region)
        self.endpoint = endpoint
    }

    /// The 1 s … 7 days S3 accepts.
    package static let expiryRange = 1...604_800

    /// A presigned URL for `method` (PUT, GET …). Headers given here (e.g. `Content-Type`) are signed and must be
    /// sent unchanged; the payload is `UNSIGNED-PAYLOAD`, so any body of the right headers is accepted.
    ///
    /// - Parameters:
    ///   - method: `GET`, `PUT` …
    ///   - location: The object (`S3Location(parsing: "s3://bucket/key")`).
    ///   - expires: Seconds the URL is valid, 1 to 604800 (7 days).
    ///   - headers: Headers signed with it, which the request must then send unchanged.
    ///   - date: The signing time; nil for now (the real clock).
    /// - Returns: The URL with its `X-Amz-*` query.
    /// - Throws: `S3Error` for an expiry out of range or a URL that cannot be signed.
    public func presignedURL(
        method: String, location: S3Location, expires: Int, headers: [(String, String)] = [], date: Date? = nil
    ) throws -> String {
        let date = date ?? SystemClock().date
        guard S3Presigner.expiryRange.contains(expires) else { throw S3Error.invalidExpiry(expires) }
        let url = endpoint.objectURL(location)
        let request = try SigV4Request(method: method, url: url, headers: headers, payload: .unsigned)
        let signed = signer.presign(request, date: date, expires: expires)
        return url + "?" + signed.query
    }

    /// What a POST form allows for the key.
    package enum KeyRule: Sendable, Equatable {
        /// Exactly this key.
        case exactly(String)
        /// Any key starting with the prefix; the form's `key` field is `keyField` (often `prefix${filename}`, which S3
        /// fills in with the uploaded file's name).
        case startsWith(String, keyField: String)
    }

    /// What a POST form allows for `Content-Type`.
    package enum ContentTypeRule: Sendable, Equatable {
        /// Exactly this type; it is also put in the form's fields.
        case exactly(String)
        /// Any type starting with the prefix (the uploader adds a `Content-Type` field).
        case startsWith(String)
    }

    /// A presigned POST: a policy with the given conditions plus the signing fields, signed with the day's key.
    package func presignedPost(
        bucket: String, key: KeyRule, contentType: ContentTypeRule? = nil,
        contentLengthRange: ClosedRange<Int64>? = nil,
        successActionStatus: Int? = nil, expires: Int, date: Date? = nil
    ) throws -> S3PresignedPost {
        let date = date ?? SystemClock().date
        guard S3Presigner.expiryRange.contains(expires) else { throw S3Error.invalidExpiry(expires) }
        if let range = contentLengthRange, range.lowerBound < 0 {
            throw S3Error.invalidPolicy("content-length-range must not be negative")
        }
        if let status = successActionStatus, ![200, 201, 204].contains(status) {
            throw S3Error.invalidPolicy("success_action_status must be 200, 201 or 204 (found \(status))")
        }
        let credential = "\(signer.credentials.accessKeyID)/\(signer.credentialScope(date: date))"
        let timestamp = SigV4Signer.timestamp(for: date)
        var conditions: [S3PostPolicy.Condition] = [.equals("bucket", bucket)]
        var fields: [(String, String)] = []
        switch key {
        case .exactly(let name):
            conditions.append(.equals("key", name))
            fields.append(("key", name))
        case .startsWith(let prefix, let keyField):
            conditions.append(.startsWith("key", prefix))
            fields.append(("key", keyField))
        }
        switch contentType {
        case .exactly(let type)?:
            conditions.append(.equals("Content-Type", type))
            fields.append(("Content-Type", type))
        case .startsWith(let prefix)?:
            conditions.append(.startsWith("Content-Type", prefix))
        case nil: break
        }
        if let range = contentLengthRange { conditions.append(.contentLengthRange(range.lowerBound, range.upperBound)) }
        if let status = successActionStatus {
            conditions.append(.equals("success_action_status", String(status)))
            fields.append(("success_action_status", String(status)))
        }
        var signing: [(String, String)] = [
            ("x-amz-algorithm", SigV4Signer.algorithm), ("x-amz-credential", credential), ("x-amz-date", timestamp),
        ]
        if let token = signer.credentials.sessionToken { signing.append(("x-amz-security-token", token)) }
        conditions += signing.map { .equals($0.0, $0.1) }
        fields += signing
        let policy = S3PostPolicy(expiration: date.addingTimeInterval(TimeInterval(expires)), conditions: conditions)
        let encoded = policy.base64
        fields.append(("policy", encoded))
        fields.append(("x-amz-signature", signer.sign(encoded, date: date)))
        return S3PresignedPost(url: endpoint.bucketURL(bucket), fields: fields, policy: policy)
    }
}
