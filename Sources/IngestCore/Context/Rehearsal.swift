import Foundation
import Synchronization

/// Stands in for the network in `ingest run --dry-run` and `ingest test`: a network stage renders its request in
/// full, as it would send it, and asks the rehearsal for the answer instead of sending it (`Exchange` does so for
/// every request, `S3Uploader` and the local copy for theirs, through `RehearsalTap` in IngestNetwork). The rehearsal records each request, redacted, under
/// the file it belongs to, and answers it from the test file's stubs, or, in a dry run, with the status the stage
/// counts as success and an empty body — the fields of such an answer render as `<ticket.upload_url>` in the
/// templates after it.
package final class Rehearsal: Sendable {
    /// A server's answer as a test file gives it.
    package struct Stub: Sendable {
        package var status: Int
        package var json: JSONValue?
        package var headers: [(name: String, value: String)]
        package init(status: Int = 200, json: JSONValue? = nil, headers: [(name: String, value: String)] = []) {
            self.status = status
            self.json = json
            self.headers = headers
        }
    }

    /// Answers by stage (its `as:` name, else the stage's kind: `request`, `upload`); nil for a dry run.
    package let stubs: [String: Stub]?
    private let recorded = Mutex<[String: [RehearsedRequest]]>([:])

    /// A dry run: every request answered with its success status and no body; answer fields render as placeholders.
    package init() { stubs = nil }

    /// A test: requests answered from `stubs` (a stage without one gets its success status and no body).
    package init(stubs: [String: Stub]) { self.stubs = stubs }

    package var isDryRun: Bool { stubs == nil }

    /// A POST form's `fields` rendered in a dry run from an answer never received (`<ticket.upload_fields>`): one
    /// field that names them, so the form still shows; any other value as it is.
    package static func placeholderFields(_ value: JSONValue, item: Item) -> JSONValue {
        if case .string(let text) = value, text.hasPrefix("<"), text.hasSuffix(">") {
            return .object([text: .string("…")])
        }
        return value
    }

    /// The requests recorded for the file at `path` (as the runner opened it), in order; forgotten once taken.
    package func take(path: String) -> [RehearsedRequest] {
        recorded.withLock { $0.removeValue(forKey: path) ?? [] }
    }

    package func record(_ request: RehearsedRequest, path: String) {
        recorded.withLock { $0[path, default: []].append(request) }
    }

    package func stub(stage: String, resultName: String?) -> Stub? {
        if let resultName, let stub = stubs?[resultName] { return stub }
        return stubs?[stage]
    }
}

/// One request a stage would have sent, secrets redacted by `Redaction`'s one rule set.
package struct RehearsedRequest: Sendable {
    /// The stage's kind (`request`, `upload`) and its `as:` name.
    package var stage: String
    package var resultName: String?
    package var method: String
    package var url: String
    package var headers: [(name: String, value: String)]
    /// The body as text: JSON, a form's fields (`name=value` lines), or what a file upload streams.
    package var body: String?
    /// What else the request carries: an S3 key and part plan, a local copy's destination.
    package var notes: [String]

    package init(
        stage: String, resultName: String?, method: String, url: String, headers: [(name: String, value: String)],
        body: String?, notes: [String]
    ) {
        self.stage = stage
        self.resultName = resultName
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.notes = notes
    }

    /// The lines `--dry-run` prints for it.
    package var lines: [String] {
        var lines = ["\(stage)\(resultName.map { " (as \($0))" } ?? ""): \(method) \(url)"]
        lines += headers.map { "  \($0.name): \($0.value)" }
        if let body { lines += body.split(separator: "\n", omittingEmptySubsequences: false).map { "  | \($0)" } }
        lines += notes.map { "  \($0)" }
        return lines
    }

    /// The fields `ingest test` compares: `url`, `method`, `body`, `key`, `headers.NAME`.
    package var json: JSONValue {
        var object: JSONObject = [
            "stage": .string(resultName ?? stage), "method": .string(method), "url": .string(url),
        ]
        var headerObject = JSONObject()
        for header in headers { headerObject[header.name] = .string(header.value) }
        object["headers"] = .object(headerObject)
        if let body { object["body"] = .string(body) }
        for note in notes {
            if let colon = note.firstIndex(of: ":") {
                let name = String(note[..<colon])
                object[name] = .string(note[note.index(after: colon)...].trimmingCharacters(in: .whitespaces))
            }
        }
        return .object(object)
    }
}
