import Foundation

/// Removes secrets from what ingest prints: log lines, reports, error messages. The upload stages pass every URL,
/// header list, form field map and free-text line through here, so a presigned URL or a bearer token can be shown
/// for debugging without handing out the right to use it.
///
/// Redacted: `X-Amz-Signature`, `X-Amz-Security-Token` and (SigV2) `Signature` query values; `Authorization`,
/// `Proxy-Authorization`, `Cookie`, `X-Api-Key` and `X-Amz-Security-Token` header values (the scheme and the
/// `Credential=` key id are kept, they say which key signed); bearer/basic tokens in text; a POST form's
/// `x-amz-signature`, `x-amz-security-token` and `signature` fields, and its `policy` when the policy embeds a
/// session token. The access key id in `X-Amz-Credential` is kept: it is not a secret and says which key signed.
public enum Redaction {
    public static let placeholder = "REDACTED"

    /// Query parameters whose values are secrets (compared case-insensitively).
    static let secretQueryNames: Set<String> = ["x-amz-signature", "x-amz-security-token", "signature"]
    /// Header fields whose whole value is a secret.
    static let secretHeaderNames: Set<String> = [
        "x-amz-security-token", "cookie", "set-cookie", "x-api-key", "x-auth-token",
    ]
    /// Form fields whose values are secrets.
    static let secretFieldNames: Set<String> = ["x-amz-signature", "x-amz-security-token", "signature"]

    /// A URL with secret query values replaced; everything else (path, other parameters, order) unchanged.
    public static func url(_ url: String) -> String {
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
    public static func headerValue(name: String, value: String) -> String {
        let lower = name.lowercased().trimmingCharacters(in: .whitespaces)
        if lower == "authorization" || lower == "proxy-authorization" { return authorization(value) }
        if secretHeaderNames.contains(lower) { return placeholder }
        return value
    }

    /// A header list, order kept.
    public static func headers(_ headers: [(String, String)]) -> [(String, String)] {
        headers.map { ($0.0, headerValue(name: $0.0, value: $0.1)) }
    }

    /// A header map.
    public static func headers(_ headers: [String: String]) -> [String: String] {
        Dictionary(uniqueKeysWithValues: headers.map { ($0.key, headerValue(name: $0.key, value: $0.value)) })
    }

    /// One form field's value (S3 POST `upload_fields`), redacted if it is a secret.
    public static func fieldValue(name: String, value: String) -> String {
        let lower = name.lowercased()
        if secretFieldNames.contains(lower) { return placeholder }
        if lower == "policy", policyEmbedsSessionToken(value) { return placeholder }
        return value
    }

    /// A form field map (an S3 POST ticket's `upload_fields`).
    public static func fields(_ fields: [String: String]) -> [String: String] {
        Dictionary(uniqueKeysWithValues: fields.map { ($0.key, fieldValue(name: $0.key, value: $0.value)) })
    }

    /// An ordered form field list.
    public static func fields(_ fields: [(String, String)]) -> [(String, String)] {
        fields.map { ($0.0, fieldValue(name: $0.0, value: $0.1)) }
    }

    /// Free text (a log line, a curl error, a response body echo): secret query values, `Signature=` in
    /// Authorization values, bearer/basic credentials, secret headers written as `Name: value`, and secret fields
    /// written as JSON (`"x-amz-signature": "…"`).
    public static func text(_ text: String) -> String {
        var result = text
        for (pattern, template) in textRules {
            let range = NSRange(result.startIndex..., in: result)
            result = pattern.stringByReplacingMatches(in: result, options: [], range: range, withTemplate: template)
        }
        return result
    }

    static let textRules: [(NSRegularExpression, String)] = [
        // query parameters and Authorization's `Signature=`: name=value up to a separator
        (#"(?i)\b(x-amz-signature|x-amz-security-token|signature)=[^&\s"',;<>]+"#, "$1=\(placeholder)"),
        // JSON-ish fields
        (
            #"(?i)("(?:x-amz-signature|x-amz-security-token|signature|cookie|x-api-key)"\s*:\s*)"[^"]*""#,
            "$1\"\(placeholder)\""
        ),
        // headers written as `Name: value`
        (
            #"(?i)\b(x-amz-security-token|cookie|set-cookie|x-api-key|x-auth-token)(\s*:\s*)[^\r\n]+"#,
            "$1$2\(placeholder)"
        ),
        // bearer and basic credentials anywhere (Authorization headers included)
        (#"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+"#, "$1 \(placeholder)"),
    ].map { (try! NSRegularExpression(pattern: $0.0), $0.1) }

    /// Keeps the scheme and any `Credential=`/`SignedHeaders=` parts, hides the signature or token.
    static func authorization(_ value: String) -> String {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if trimmed.uppercased().hasPrefix("AWS4-") {
            return text(trimmed)
        }
        guard let space = trimmed.firstIndex(of: " ") else { return placeholder }
        return "\(trimmed[..<space]) \(placeholder)"
    }

    static func policyEmbedsSessionToken(_ base64: String) -> Bool {
        var text = base64.filter { !$0.isWhitespace }
        text += String(repeating: "=", count: (4 - text.count % 4) % 4)
        guard let data = Data(base64Encoded: text) else { return false }
        return String(decoding: data, as: UTF8.self).lowercased().contains("x-amz-security-token")
    }
}
