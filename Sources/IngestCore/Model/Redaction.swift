import Foundation

/// Removes secrets from what ingest prints: log lines, reports, error messages, `status`. This is the one rule set
/// every output goes through: the upload stages pass URLs, headers, form fields and server answers through here
/// where they build messages, and the report writers, `ingest status` and standard error pass everything once more
/// on the way out (`ItemReport.redacted`, `text`), so a presigned URL or a bearer token can be shown for debugging
/// without handing out the right to use it.
///
/// Redacted, wherever they appear (a URL's query, `name=value` text, JSON, a header line):
/// - signed-URL signatures: AWS `X-Amz-Signature` and SigV2 `Signature`, Google Cloud Storage / Firebase v4
///   `X-Goog-Signature` and v2 `Signature`, Azure SAS `sig`; session tokens (`X-Amz-Security-Token`) and other
///   bearer-like query values (`token`, `access_token`, `api_key` …);
/// - `Authorization` / `Proxy-Authorization` values (the scheme and AWS's `Credential=` key id are kept: they say
///   which key signed), bearer/basic credentials in text, `Cookie`, `X-Api-Key` and similar header values;
/// - a URL's password (`https://user:REDACTED@host/`);
/// - a POST form's `x-amz-signature`, `x-amz-security-token`, `signature` and `policy` fields, and JSON secrets
///   (`token`, `password`, `secret` …).
/// Kept: `X-Amz-Credential`, `X-Goog-Credential`, `GoogleAccessId` and Azure's `sv`/`se`/`sp`: they name a key or a
/// scope, not a secret.
package enum Redaction {
    package static let placeholder = "REDACTED"

    /// Query parameters (and `name=value` pairs in text) whose values are secrets, compared case-insensitively.
    static let secretQueryNames: Set<String> = [
        "x-amz-signature", "x-amz-security-token", "signature", "x-goog-signature", "sig", "token", "access_token",
        "api_key", "apikey", "client_secret", "password",
    ]
    /// Header fields whose whole value is a secret.
    static let secretHeaderNames: Set<String> = [
        "x-amz-security-token", "cookie", "set-cookie", "x-api-key", "x-auth-token", "x-goog-api-key",
    ]
    /// Form fields and JSON keys whose values are secrets (an S3 POST ticket's `upload_fields`, a token answer).
    static let secretFieldNames: Set<String> =
        secretQueryNames.union(secretHeaderNames).union([
            "policy", "refresh_token", "id_token", "secret", "secret_access_key", "secretaccesskey", "sessiontoken",
            "session_token",
        ])

    /// A URL with secret query values and any password replaced; everything else (path, other parameters, order)
    /// unchanged.
    package static func url(_ url: String) -> String {
        let url = userinfo(url)
        guard let queryStart = url.firstIndex(of: "?") else { return url }
        let fragmentStart = url[queryStart...].firstIndex(of: "#") ?? url.endIndex
        let query = url[url.index(after: queryStart)..<fragmentStart]
        let redacted = query.split(separator: "&", omittingEmptySubsequences: false).map { item -> String in
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = AWSURI.decodeString(String(parts[0])).lowercased()
            return secretQueryNames.contains(name) && parts.count == 2 ? "\(parts[0])=\(placeholder)" : String(item)
        }
        return String(url[...queryStart]) + redacted.joined(separator: "&") + String(url[fragmentStart...])
    }

    /// One header's value, redacted if the header carries a secret.
    package static func headerValue(name: String, value: String) -> String {
        let lower = name.lowercased().trimmingCharacters(in: .whitespaces)
        if lower == "authorization" || lower == "proxy-authorization" { return authorization(value) }
        if secretHeaderNames.contains(lower) { return placeholder }
        return text(value)
    }

    /// A header list, order kept.
    package static func headers(_ headers: [(String, String)]) -> [(String, String)] {
        headers.map { ($0.0, headerValue(name: $0.0, value: $0.1)) }
    }

    /// A header map.
    package static func headers(_ headers: [String: String]) -> [String: String] {
        Dictionary(uniqueKeysWithValues: headers.map { ($0.key, headerValue(name: $0.key, value: $0.value)) })
    }

    /// One form field's or JSON key's value, redacted if it is a secret. A POST policy is redacted whole: with its
    /// signature it is the right to upload, and the README promises reports never show it.
    package static func fieldValue(name: String, value: String) -> String {
        let lower = name.lowercased()
        if lower == "authorization" || lower == "proxy-authorization" { return authorization(value) }
        if secretFieldNames.contains(lower) { return value.isEmpty ? value : placeholder }
        return value
    }

    /// A form field map (an S3 POST ticket's `upload_fields`).
    package static func fields(_ fields: [String: String]) -> [String: String] {
        Dictionary(uniqueKeysWithValues: fields.map { ($0.key, fieldValue(name: $0.key, value: $0.value)) })
    }

    /// An ordered form field list.
    package static func fields(_ fields: [(String, String)]) -> [(String, String)] {
        fields.map { ($0.0, fieldValue(name: $0.0, value: $0.1)) }
    }

    /// Free text (a log line, a curl error, a response body echo, a whole report line): secret query values,
    /// `Signature=` in Authorization values, URL passwords, bearer/basic credentials, secret headers written as
    /// `Name: value`, and secret fields written as JSON (`"x-amz-signature": "…"`). Applying it twice changes
    /// nothing more.
    package static func text(_ text: String) -> String {
        let marks = TextMarks(text)
        var result = text
        for (pattern, template, mayMatch) in textRules where mayMatch(marks) {
            let range = NSRange(result.startIndex..., in: result)
            result = pattern.stringByReplacingMatches(in: result, options: [], range: range, withTemplate: template)
        }
        return result
    }

    /// The characters each of `textRules` cannot match without, found in one pass over the bytes: most text a
    /// report carries (`already done (journal)`, a path) has none, and then no regular expression runs — each
    /// costs a conversion to UTF-16 and a scan in ICU, which was a sixth of a 100,000-file rerun. A replacement
    /// only adds characters a rule already needed to match (or the placeholder), so the marks stay valid.
    struct TextMarks {
        var colon = false
        var equals = false
        var quote = false
        /// Any byte past ASCII: ICU's case-insensitive matching folds some letters outside ASCII (`ſ` to `s`,
        /// the Kelvin sign to `k`), so a word check on ASCII letters alone would not be safe.
        var nonASCII = false
        var schemeSeparator = false
        var credentialWord = false

        init(_ text: String) {
            var previous: (UInt8, UInt8) = (0, 0)
            for byte in text.utf8 {
                switch byte {
                case UInt8(ascii: ":"): colon = true
                case UInt8(ascii: "="): equals = true
                case UInt8(ascii: "\""): quote = true
                case UInt8(ascii: "/") where previous == (UInt8(ascii: ":"), UInt8(ascii: "/")):
                    schemeSeparator = true
                default: if byte >= 0x80 { nonASCII = true }
                }
                previous = (previous.1, byte)
            }
            if !nonASCII {
                let lower = text.utf8.map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") ? $0 | 0x20 : $0 }
                credentialWord = TextMarks.contains(lower, "bearer") || TextMarks.contains(lower, "basic")
            }
        }

        /// True when the lowercased ASCII bytes hold `word`.
        private static func contains(_ bytes: [UInt8], _ word: StaticString) -> Bool {
            let count = word.utf8CodeUnitCount
            guard bytes.count >= count else { return false }
            let start = word.utf8Start
            return (0...(bytes.count - count)).contains { offset in
                (0..<count).allSatisfy { bytes[offset + $0] == start[$0] }
            }
        }
    }

    static func alternatives(_ names: Set<String>) -> String {
        names.sorted { $0.count > $1.count }.map(NSRegularExpression.escapedPattern(for:)).joined(separator: "|")
    }

    /// Each rule with the marks it cannot match without (see `TextMarks`).
    static let textRules: [(NSRegularExpression, String, @Sendable (TextMarks) -> Bool)] = rules.map {
        (try! NSRegularExpression(pattern: $0.pattern), $0.template, $0.needs)
    }

    private static let rules: [(pattern: String, template: String, needs: @Sendable (TextMarks) -> Bool)] = [
        // a URL's password: scheme://user:password@host
        (#"(?i)\b([a-z][a-z0-9+.-]*://[^/\s:@?#"'<>]*):[^/\s?#"'<>]*@"#, "$1:\(placeholder)@", { $0.schemeSeparator }),
        // query parameters and Authorization's `Signature=`: name=value up to a separator (`X-Goog-Signature` is
        // found as itself and `X-Amz-Security-Token` as itself, not as `Signature`/`Token` inside a longer name); a
        // `:` before a space or the end is the text's (`upload q?sig=x.mov: PUT …`), not the value's
        (
            #"(?i)(?<![A-Za-z0-9_-])("# + alternatives(secretQueryNames)
                + #")=(?!REDACTED\b)(?:[^&\s"',;<>\\:]|:(?!\s|$)|\\/)+"#,
            "$1=\(placeholder)", { $0.equals }
        ),
        // JSON-ish fields: "name": "value"
        (
            #"(?i)("(?:"# + alternatives(secretFieldNames.subtracting(["authorization"]))
                + #")"\s*:\s*)"(?:[^"\\]|\\.)*""#,
            "$1\"\(placeholder)\"", { $0.quote && $0.colon }
        ),
        // headers written as `Name: value`
        (#"(?i)\b("# + alternatives(secretHeaderNames) + #")(\s*:\s*)[^\r\n]+"#, "$1$2\(placeholder)", { $0.colon }),
        // Authorization with a scheme other than AWS4 (which keeps its Credential=, its Signature= is above) and
        // other than bearer/basic (below): `Authorization: Token abc`, `"authorization": "Token abc"`
        (
            #"(?i)\b((?:proxy-)?authorization"?\s*[:=]\s*"?)(?!AWS4-|bearer\s|basic\s|REDACTED)"#
                + #"([A-Za-z][\w.-]*\s+)?[^\s",;]+"#,
            "$1$2\(placeholder)", { $0.colon || $0.equals }
        ),
        // bearer and basic credentials anywhere (Authorization headers included)
        (
            #"(?i)\b(bearer|basic)\s+(?!REDACTED\b)[A-Za-z0-9._~+/=-]+"#, "$1 \(placeholder)",
            { $0.credentialWord || $0.nonASCII }
        ),
    ]

    /// `scheme://user:password@host…` with the password replaced (the user is kept: it says who).
    static func userinfo(_ url: String) -> String {
        guard let scheme = url.range(of: "://") else { return url }
        let authorityEnd = url[scheme.upperBound...].firstIndex { "/?#".contains($0) } ?? url.endIndex
        guard let at = url[scheme.upperBound..<authorityEnd].lastIndex(of: "@"),
            let colon = url[scheme.upperBound..<at].firstIndex(of: ":")
        else { return url }
        return String(url[...colon]) + placeholder + String(url[at...])
    }

    /// Keeps the scheme and any `Credential=`/`SignedHeaders=` parts, hides the signature or token.
    static func authorization(_ value: String) -> String {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if trimmed.uppercased().hasPrefix("AWS4-") {
            return text(trimmed)
        }
        guard let space = trimmed.firstIndex(of: " ") else { return trimmed.isEmpty ? trimmed : placeholder }
        return "\(trimmed[..<space]) \(placeholder)"
    }
}
