import Foundation
import NativeCurl
import Synchronization

/// Stands in for the network in `ingest run --dry-run` and `ingest test`: a network stage renders its request in
/// full, as it would send it, and asks the rehearsal for the answer instead of sending it (`Exchange` does so for
/// every request, `S3Uploader` and the local copy for theirs). The rehearsal records each request, redacted, under
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
    let stubs: [String: Stub]?
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

    func record(_ request: RehearsedRequest, path: String) {
        recorded.withLock { $0[path, default: []].append(request) }
    }

    func stub(stage: String, resultName: String?) -> Stub? {
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

/// The rehearsal as one stage of one file sees it: where its requests are recorded and how they are answered.
package struct RehearsalTap {
    let rehearsal: Rehearsal
    let item: Item
    let stage: String
    let resultName: String?
    /// The status a dry run answers with: the one the stage counts as success.
    let success: Int

    /// Records `request` and returns the answer; `notes` say what the request line cannot (an S3 part plan).
    package func answer(_ request: HTTPRequest, notes: [String] = []) -> HTTPResponse {
        rehearsal.record(Self.rendered(request, stage: stage, resultName: resultName, notes: notes), path: item.path)
        if rehearsal.isDryRun, let resultName {
            // The answer's fields are unknown: templates that read them render `<name.field>`.
            item.templateValues["placeholder:" + resultName] = .bool(true)
        }
        guard let stub = rehearsal.stub(stage: stage, resultName: resultName) else {
            return HTTPResponse(status: success, bytesSent: request.body.map(Self.length) ?? 0)
        }
        return HTTPResponse(
            status: stub.status, headers: stub.headers, body: stub.json.map { Array($0.serialized().utf8) } ?? [],
            bytesSent: request.body.map(Self.length) ?? 0)
    }

    static func length(_ body: HTTPBody) -> Int64 { Int64(body.head.count + body.tail.count) + (body.file?.size ?? 0) }

    static func rendered(_ request: HTTPRequest, stage: String, resultName: String?, notes: [String])
        -> RehearsedRequest
    {
        let headers = request.headers.map {
            (name: $0.name, value: Redaction.headerValue(name: $0.name, value: $0.value))
        }
        var body: String?
        if let http = request.body {
            var parts: [String] = []
            if !http.head.isEmpty && http.file == nil {
                let text = String(decoding: http.head, as: UTF8.self)
                parts.append(
                    (try? JSONValue.parse(http.head)).map { Redaction.json($0).serialized() } ?? Redaction.text(text))
            }
            if let file = http.file {
                parts += formFields(http.head).map { "\($0.0)=\(Redaction.fieldValue(name: $0.0, value: $0.1))" }
                parts.append("<\(file.size) bytes of \((file.path as NSString).lastPathComponent)>")
            }
            body = parts.isEmpty ? nil : parts.joined(separator: "\n")
        }
        return RehearsedRequest(
            stage: stage, resultName: resultName, method: request.method, url: Redaction.url(request.url),
            headers: headers, body: body, notes: notes.map(Redaction.text))
    }
}

/// The `name=value` fields of a multipart/form-data head (an S3 POST form before its file part), in order.
func formFields(_ head: [UInt8]) -> [(String, String)] {
    let text = String(decoding: head, as: UTF8.self)
    var fields: [(String, String)] = []
    for part in text.components(separatedBy: "\r\n--") {
        guard let nameStart = part.range(of: "name=\""), !part.contains("filename="),
            let nameEnd = part.range(of: "\"", range: nameStart.upperBound..<part.endIndex),
            let valueStart = part.range(of: "\r\n\r\n")
        else { continue }
        var value = String(part[valueStart.upperBound...])
        if value.hasSuffix("\r\n") { value.removeLast() }
        fields.append((String(part[nameStart.upperBound..<nameEnd.lowerBound]), value))
    }
    return fields
}

extension StageContext {
    /// The tap a network stage asks instead of the network, when the run is a rehearsal.
    package func rehearsal(for item: Item, stage: String, success: Int) -> RehearsalTap? {
        settings.rehearsal.map {
            RehearsalTap(rehearsal: $0, item: item, stage: stage, resultName: resultName, success: success)
        }
    }
}
