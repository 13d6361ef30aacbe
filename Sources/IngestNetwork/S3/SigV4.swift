import Crypto
import Foundation
import IngestCore

/// The body hash a request is signed with.
package enum SigV4Payload: Sendable, Equatable {
    /// `UNSIGNED-PAYLOAD`: presigned S3 URLs (the signer never sees the body) and streams hashed by nobody.
    case unsigned
    /// Lowercase hex SHA-256 of the body. The caller computes it (uploads hash files while streaming them, so the
    /// signer never needs the bytes).
    case sha256(String)

    /// The SHA-256 of an empty body, which GET/HEAD/DELETE requests sign.
    package static let empty = SigV4Payload.sha256("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")

    /// Hashes a small in-memory body (request JSON, test fixtures); files should be hashed by streaming.
    package static func hashing(_ body: some DataProtocol) -> SigV4Payload {
        .sha256(SHA256.hash(data: body).hexString)
    }

    /// What goes on the canonical request's last line and in `x-amz-content-sha256`.
    package var value: String {
        switch self {
        case .unsigned: return "UNSIGNED-PAYLOAD"
        case .sha256(let hex): return hex
        }
    }
}

/// A request as it will be sent: the signer reads it and says which headers or query items to add.
package struct SigV4Request: Sendable {
    package var method: String
    /// The path as sent on the request line (percent-encoded; raw bytes are tolerated and encoded when signing).
    package var path: String
    /// The query as sent, without `?`; empty when there is none.
    package var query: String
    /// Header fields in order; names are case-insensitive and repeated names are allowed.
    package var headers: [(String, String)]
    package var payload: SigV4Payload

    package init(
        method: String, path: String, query: String = "", headers: [(String, String)],
        payload: SigV4Payload = .empty
    ) {
        self.method = method
        self.path = path.isEmpty ? "/" : path
        self.query = query
        self.headers = headers
        self.payload = payload
    }

    /// Takes an absolute URL apart without re-encoding it (Foundation's URL may re-encode the path, which would
    /// change what is signed). A `Host` header is added unless one is given, with the port only when it is not the
    /// scheme's default.
    package init(method: String, url: String, headers: [(String, String)] = [], payload: SigV4Payload = .empty) throws {
        let parts = try SigV4Request.split(url)
        var headers = headers
        if !headers.contains(where: { $0.0.lowercased() == "host" }) { headers.insert(("Host", parts.host), at: 0) }
        self.init(method: method, path: parts.path, query: parts.query, headers: headers, payload: payload)
    }

    /// scheme, Host header value, path and query of an absolute http(s) URL.
    static func split(_ url: String) throws -> (scheme: String, host: String, path: String, query: String) {
        guard let schemeEnd = url.range(of: "://") else { throw S3Error.invalidURL(url) }
        let scheme = url[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else { throw S3Error.invalidURL(url) }
        var rest = url[schemeEnd.upperBound...]
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        var authority = String(rest[..<authorityEnd])
        guard !authority.isEmpty, !authority.contains("@") else { throw S3Error.invalidURL(url) }
        let defaultPort = scheme == "https" ? ":443" : ":80"
        if authority.hasSuffix(defaultPort) { authority.removeLast(defaultPort.count) }
        let target = rest[authorityEnd...]
        let queryStart = target.firstIndex(of: "?")
        let path = String(target[..<(queryStart ?? target.endIndex)])
        let query = queryStart.map { String(target[target.index(after: $0)...]) } ?? ""
        return (scheme, authority, path.isEmpty ? "/" : path, query)
    }
}

/// What signing produced: the intermediate texts (compared byte for byte with AWS's test suite) and what to add
/// to the request.
package struct SigV4Signature: Sendable {
    package var canonicalRequest: String
    package var stringToSign: String
    /// Lowercase hex HMAC-SHA256.
    package var signature: String
    /// Header signing: the fields to add, in order (`X-Amz-Security-Token`, `X-Amz-Date`, `x-amz-content-sha256`,
    /// `Authorization`). Empty for query signing.
    package var headers: [(String, String)]
    /// Query signing: the already-encoded `X-Amz-*` items to append, `X-Amz-Signature` last. Empty for header signing.
    package var queryItems: [(String, String)]
    /// The query to send: the request's own query followed by `queryItems`.
    package var query: String
}

/// AWS Signature Version 4 (HMAC-SHA256) for header-signed requests and presigned (query-signed) URLs.
///
/// The general algorithm is the one AWS's signing test suite checks; S3 differs in three ways that
/// ``Rules/s3`` selects: paths are neither normalised nor encoded a second time, and header-signed requests
/// carry `x-amz-content-sha256`.
package struct SigV4Signer: Sendable {
    package static let algorithm = "AWS4-HMAC-SHA256"

    /// How the path as sent becomes the canonical path.
    package enum PathEncoding: Sendable, Equatable {
        /// URI-encode the path as sent once more (every AWS service but S3; a sent `%20` is signed as `%2520`).
        case encodeAgain
        /// Sign the path as sent, encoded exactly once (S3: escapes are decoded and re-encoded canonically, so a sent
        /// `%20` stays `%20` and a raw space becomes `%20`).
        case asSent
    }

    /// The service's signing rules (a nested `Options` would share its name with every stage's options).
    package struct Rules: Sendable, Equatable {
        /// Remove `.` and `..` segments and repeated slashes before signing. S3 must not: `a//b` and `a/./b` are
        /// distinct keys there.
        package var normalizePath: Bool
        package var pathEncoding: PathEncoding
        /// Add and sign `x-amz-content-sha256` on header-signed requests (S3 refuses requests without it).
        package var addContentSHA256Header: Bool
        /// Leave the session token out of the signature and add it afterwards (services that expect it unsigned).
        package var omitSessionTokenFromSignature: Bool

        package init(
            normalizePath: Bool = true, pathEncoding: PathEncoding = .encodeAgain, addContentSHA256Header: Bool = false,
            omitSessionTokenFromSignature: Bool = false
        ) {
            self.normalizePath = normalizePath
            self.pathEncoding = pathEncoding
            self.addContentSHA256Header = addContentSHA256Header
            self.omitSessionTokenFromSignature = omitSessionTokenFromSignature
        }

        /// S3's rules: no normalisation, single encoding, `x-amz-content-sha256` on signed requests.
        package static let s3 = Rules(normalizePath: false, pathEncoding: .asSent, addContentSHA256Header: true)
    }

    package var credentials: AWSCredentials
    package var region: String
    package var service: String
    package var options: Rules

    package init(credentials: AWSCredentials, region: String, service: String, options: Rules = Rules()) {
        self.credentials = credentials
        self.region = region
        self.service = service
        self.options = options
    }

    /// A signer for S3 in `region` with S3's rules.
    package static func s3(credentials: AWSCredentials, region: String) -> SigV4Signer {
        SigV4Signer(credentials: credentials, region: region, service: "s3", options: .s3)
    }

    /// Headers never signed: proxies and clients add or change them on the way (curl sets its own User-Agent and
    /// `Expect`), and signing them would make valid requests fail.
    static let unsignedHeaders: Set<String> = [
        "authorization", "user-agent", "x-amzn-trace-id", "expect", "connection", "transfer-encoding", "keep-alive",
        "proxy-authorization", "te", "upgrade",
    ]

    /// `<yyyyMMdd>/<region>/<service>/aws4_request`.
    package func credentialScope(date: Date) -> String {
        "\(SigV4Signer.timestamp(for: date).prefix(8))/\(region)/\(service)/aws4_request"
    }

    /// kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region), service), "aws4_request").
    package func signingKey(date: Date) -> SymmetricKey {
        let day = String(SigV4Signer.timestamp(for: date).prefix(8))
        var key = SymmetricKey(data: Array(("AWS4" + credentials.secretAccessKey).utf8))
        for part in [day, region, service, "aws4_request"] {
            key = SymmetricKey(data: Array(HMAC<SHA256>.authenticationCode(for: Array(part.utf8), using: key)))
        }
        return key
    }

    /// Hex HMAC-SHA256 of `text` with the day's signing key (also what an S3 POST policy is signed with).
    package func sign(_ text: String, date: Date) -> String {
        HMAC<SHA256>.authenticationCode(for: Array(text.utf8), using: signingKey(date: date)).hexString
    }

    /// Signs with an `Authorization` header. Existing `Authorization`, `X-Amz-Date` and (when added here)
    /// `X-Amz-Security-Token`/`x-amz-content-sha256` fields are replaced, so signing twice is harmless.
    package func signHeaders(_ request: SigV4Request, date: Date) -> SigV4Signature {
        let timestamp = SigV4Signer.timestamp(for: date)
        var replaced: Set<String> = ["authorization", "x-amz-date"]
        if credentials.sessionToken != nil { replaced.insert("x-amz-security-token") }
        if options.addContentSHA256Header { replaced.insert("x-amz-content-sha256") }
        var headers = request.headers.filter { !replaced.contains($0.0.lowercased()) }
        var added: [(String, String)] = []
        if let token = credentials.sessionToken {
            added.append(("X-Amz-Security-Token", token))
            if !options.omitSessionTokenFromSignature { headers.append(("X-Amz-Security-Token", token)) }
        }
        added.append(("X-Amz-Date", timestamp))
        headers.append(("X-Amz-Date", timestamp))
        if options.addContentSHA256Header {
            added.append(("x-amz-content-sha256", request.payload.value))
            headers.append(("x-amz-content-sha256", request.payload.value))
        }
        let (canonicalHeaders, signedHeaders) = SigV4Signer.canonicalHeaders(headers)
        let canonicalRequest = [
            request.method, canonicalPath(request.path), SigV4Signer.canonicalQuery(request.query), canonicalHeaders,
            signedHeaders, request.payload.value,
        ].joined(separator: "\n")
        let stringToSign = self.stringToSign(canonicalRequest, date: date)
        let signature = sign(stringToSign, date: date)
        let authorization =
            "\(SigV4Signer.algorithm) Credential=\(credentials.accessKeyID)/\(credentialScope(date: date)), "
            + "SignedHeaders=\(signedHeaders), Signature=\(signature)"
        added.append(("Authorization", authorization))
        return SigV4Signature(
            canonicalRequest: canonicalRequest, stringToSign: stringToSign, signature: signature, headers: added,
            queryItems: [], query: request.query)
    }

    /// Presigns: the signature goes into the query (`X-Amz-Algorithm` … `X-Amz-Signature`), valid for `expires`
    /// seconds from `date`. Every header given is signed, so the client must send the same values (a presigned PUT
    /// with `Content-Type` refuses any other type).
    package func presign(_ request: SigV4Request, date: Date, expires: Int) -> SigV4Signature {
        let timestamp = SigV4Signer.timestamp(for: date)
        let authNames: Set<String> = [
            "x-amz-algorithm", "x-amz-credential", "x-amz-date", "x-amz-expires", "x-amz-signedheaders",
            "x-amz-security-token", "x-amz-signature",
        ]
        let ownItems = request.query.split(separator: "&", omittingEmptySubsequences: true).filter {
            let name = $0.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)[0]
            return !authNames.contains(AWSURI.decodeString(String(name)).lowercased())
        }
        let ownQuery =
            ownItems.count == request.query.split(separator: "&").count
            ? request.query : ownItems.joined(separator: "&")
        let headers = request.headers.filter { $0.0.lowercased() != "authorization" }
        let (canonicalHeaders, signedHeaders) = SigV4Signer.canonicalHeaders(headers)
        var items: [(String, String)] = [
            ("X-Amz-Algorithm", SigV4Signer.algorithm),
            ("X-Amz-Credential", AWSURI.encode("\(credentials.accessKeyID)/\(credentialScope(date: date))")),
            ("X-Amz-Date", timestamp),
            ("X-Amz-SignedHeaders", AWSURI.encode(signedHeaders)),
            ("X-Amz-Expires", String(expires)),
        ]
        let token = credentials.sessionToken.map { ("X-Amz-Security-Token", AWSURI.encode($0)) }
        if let token, !options.omitSessionTokenFromSignature { items.append(token) }
        let signedQuery = ([ownQuery] + items.map { "\($0.0)=\($0.1)" }).filter { !$0.isEmpty }.joined(separator: "&")
        let canonicalRequest = [
            request.method, canonicalPath(request.path), SigV4Signer.canonicalQuery(signedQuery), canonicalHeaders,
            signedHeaders, request.payload.value,
        ].joined(separator: "\n")
        let stringToSign = self.stringToSign(canonicalRequest, date: date)
        let signature = sign(stringToSign, date: date)
        if let token, options.omitSessionTokenFromSignature { items.append(token) }
        items.append(("X-Amz-Signature", signature))
        let query = ([ownQuery] + items.map { "\($0.0)=\($0.1)" }).filter { !$0.isEmpty }.joined(separator: "&")
        return SigV4Signature(
            canonicalRequest: canonicalRequest, stringToSign: stringToSign, signature: signature, headers: [],
            queryItems: items, query: query)
    }

    func stringToSign(_ canonicalRequest: String, date: Date) -> String {
        [
            SigV4Signer.algorithm, SigV4Signer.timestamp(for: date), credentialScope(date: date),
            SHA256.hash(data: Array(canonicalRequest.utf8)).hexString,
        ].joined(separator: "\n")
    }

    /// The canonical URI: normalised (unless S3) and URI-encoded per ``PathEncoding``; `/` is never encoded.
    func canonicalPath(_ path: String) -> String {
        var path = path.isEmpty ? "/" : path
        if options.normalizePath { path = SigV4Signer.removeDotSegments(path) }
        switch options.pathEncoding {
        case .encodeAgain: return AWSURI.encode(Array(path.utf8), keepSlash: true)
        case .asSent: return AWSURI.encode(AWSURI.decode(path), keepSlash: true)
        }
    }

    /// RFC 3986 dot-segment removal plus collapsing empty segments (`//example//` → `/example/`), as AWS
    /// normalises paths for every service but S3.
    static func removeDotSegments(_ path: String) -> String {
        var output: [Substring] = []
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        for segment in segments {
            switch segment {
            case "", ".": continue
            case "..": _ = output.popLast()
            default: output.append(segment)
            }
        }
        let last = segments.last ?? ""
        let trailingSlash = last.isEmpty || last == "." || last == ".."
        if output.isEmpty { return "/" }
        return "/" + output.joined(separator: "/") + (trailingSlash ? "/" : "")
    }

    /// Each name and value decoded then encoded exactly once, sorted by name then value; a missing `=` means an
    /// empty value.
    static func canonicalQuery(_ query: String) -> String {
        query.split(separator: "&", omittingEmptySubsequences: true).map { item -> (String, String) in
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = AWSURI.encode(AWSURI.decode(String(parts[0])), keepSlash: false)
            let value = parts.count > 1 ? AWSURI.encode(AWSURI.decode(String(parts[1])), keepSlash: false) : ""
            return (name, value)
        }
        .sorted {
            $0.0 == $1.0
                ? Array($0.1.utf8).lexicographicallyPrecedes($1.1.utf8)
                : Array($0.0.utf8).lexicographicallyPrecedes($1.0.utf8)
        }
        .map { "\($0.0)=\($0.1)" }.joined(separator: "&")
    }

    /// Lower-cased names sorted, repeated names' values joined with `,` in order, values trimmed with inner runs of
    /// whitespace (folded lines included) collapsed to one space.
    static func canonicalHeaders(_ headers: [(String, String)]) -> (canonical: String, signed: String) {
        var values: [String: [String]] = [:]
        for (name, value) in headers {
            let lower = name.lowercased().trimmingCharacters(in: .whitespaces)
            if unsignedHeaders.contains(lower) { continue }
            let collapsed = value.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "\n" })
                .joined(separator: " ")
            values[lower, default: []].append(collapsed)
        }
        let names = values.keys.sorted { Array($0.utf8).lexicographicallyPrecedes($1.utf8) }
        let canonical = names.map { "\($0):\(values[$0]!.joined(separator: ","))\n" }.joined()
        return (canonical, names.joined(separator: ";"))
    }

    /// `YYYYMMDDTHHMMSSZ` in UTC, the form of `X-Amz-Date`.
    package static func timestamp(for date: Date) -> String {
        let t = UTCTime(secondsSince1970: date.timeIntervalSince1970)
        let d = UTCTime.digits
        return "\(d(t.year, 4))\(d(t.month, 2))\(d(t.day, 2))T\(d(t.hour, 2))\(d(t.minute, 2))\(d(t.second, 2))Z"
    }

    /// Reads `YYYYMMDDTHHMMSSZ` (what `--date` takes and `X-Amz-Date` carries).
    package static func date(fromTimestamp text: String) throws -> Date {
        let digits = Array(text.utf8)
        guard digits.count == 16, digits[8] == UInt8(ascii: "T"), digits[15] == UInt8(ascii: "Z"),
            (digits[0..<8] + digits[9..<15]).allSatisfy({ $0 >= 48 && $0 <= 57 })
        else { throw S3Error.invalidDate(text) }
        func number(_ range: Range<Int>) -> Int { Int(String(decoding: digits[range], as: UTF8.self))! }
        var components = DateComponents()
        (components.year, components.month, components.day) = (number(0..<4), number(4..<6), number(6..<8))
        (components.hour, components.minute, components.second) = (number(9..<11), number(11..<13), number(13..<15))
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        guard components.isValidDate(in: calendar), let date = calendar.date(from: components),
            timestamp(for: date) == text
        else { throw S3Error.invalidDate(text) }
        return date
    }
}
