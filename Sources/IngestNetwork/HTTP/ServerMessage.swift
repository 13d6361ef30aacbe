import Foundation
import IngestCore
import NativeCurl

/// What a server said in an error body, short: S3's `Code: Message`, a JSON `detail`/`message`/`error`, or the
/// start of the text; secrets redacted.
package enum ServerMessage {
    package static func of(_ response: HTTPResponse) -> String? {
        let text = response.bodyText.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { return nil }
        if text.contains("<Error>") || text.hasPrefix("<?xml") {
            let code = XMLText.element("Code", in: text)
            let message = XMLText.element("Message", in: text)
            if code != nil || message != nil {
                return Redaction.text([code, message].compactMap { $0 }.joined(separator: ": "))
            }
        }
        if let json = try? JSONValue.parse(response.body) {
            for path in ["detail", "message", "error.message", "error", "body.error", "errors"] {
                if let value = json.lookup(path) {
                    return Redaction.text(value.stringValue ?? value.serialized())
                }
            }
        }
        let firstLine = text.prefix(300)
        return Redaction.text(String(firstLine)) + (text.count > 300 ? "…" : "")
    }

    /// "403 Forbidden" style reason phrases for the statuses a user meets.
    package static func statusLine(_ status: Int) -> String {
        let phrases = [
            400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
            408: "Request Timeout", 409: "Conflict", 411: "Length Required", 412: "Precondition Failed",
            413: "Content Too Large", 415: "Unsupported Media Type", 422: "Unprocessable Content",
            429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable",
            504: "Gateway Timeout",
            301: "Moved Permanently", 302: "Found", 303: "See Other", 307: "Temporary Redirect",
            308: "Permanent Redirect",
        ]
        return phrases[status].map { "\(status) \($0)" } ?? "\(status)"
    }
}
