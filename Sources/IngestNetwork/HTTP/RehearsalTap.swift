import Foundation
import IngestCore
import NativeCurl

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
