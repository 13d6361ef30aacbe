import IngestStages

/// The multipart fuzz entry and the small RFC 7578 reader it checks `MultipartForm` against.
extension FuzzEntries {
    /// NUL-separated: field name, value, name, value …, then the file name, its type and the file's bytes.
    static func multipart(_ bytes: [UInt8]) {
        var segments = bytes.split(separator: 0, omittingEmptySubsequences: false).map { Array($0) }
        let file = segments.count > 0 ? segments.removeLast() : []
        let fileType = segments.count > 0 ? String(decoding: segments.removeLast(), as: UTF8.self) : "image/jpeg"
        let fileName = segments.count > 0 ? String(decoding: segments.removeLast(), as: UTF8.self) : "a.jpg"
        var fields: [(String, String)] = []
        while segments.count >= 2 {
            let name = String(decoding: segments.removeFirst(), as: UTF8.self)
            fields.append((name, String(decoding: segments.removeFirst(), as: UTF8.self)))
        }
        let form = MultipartForm(fields: fields, fileName: fileName, fileType: fileType)
        let parts = MultipartReader.parts(of: form.head + file + form.tail, boundary: form.boundary)
        guard let parts else { preconditionFailure("the form does not parse back: \(fields) \(fileName) \(fileType)") }
        precondition(parts.count == fields.count + 1, "\(parts.count) parts for \(fields.count) fields and a file")
        // Bytes, not Strings: Swift compares Characters, and a combining mark after `"` or a space hides a prefix.
        for (part, field) in zip(parts, fields) {
            precondition(part.headers.count == 1, "field \(field.0): headers \(part.headers)")
            precondition(part.name == Array(MultipartForm.quoted(field.0).utf8), "field \(field.0)'s name changed")
            precondition(part.body == Array(field.1.utf8), "field \(field.0)'s value changed")
        }
        let last = parts[parts.count - 1]
        precondition(
            last.name == Array("file".utf8) && last.headers.count == 2, "the file is not last: \(last.headers)")
        let fileNameParameter = Array("; filename=\"\(MultipartForm.quoted(fileName))\"".utf8)
        precondition(last.headers[0].ends(with: fileNameParameter), "file name lost: \(last.headers)")
        precondition(last.headers[1].starts(with: "Content-Type: ".utf8), "no Content-Type: \(last.headers)")
        precondition(last.body == file, "the file's bytes changed")
    }
}

/// Splits a multipart/form-data body at its boundary lines; nil when it is not well formed.
enum MultipartReader {
    struct Part {
        var headers: [[UInt8]]
        var name: [UInt8]
        var body: [UInt8]
    }

    static func parts(of body: [UInt8], boundary: String) -> [Part]? {
        let first = Array("--\(boundary)\r\n".utf8)
        let delimiter = Array("\r\n--\(boundary)".utf8)
        guard body.starts(with: first) else { return nil }
        var parts: [Part] = []
        var start = first.count
        while let end = find(delimiter, in: body, from: start) {
            guard let part = part(Array(body[start..<end])) else { return nil }
            parts.append(part)
            let after = end + delimiter.count
            if body[after...].elementsEqual("--\r\n".utf8) { return parts }
            guard body[after...].starts(with: "\r\n".utf8) else { return nil }
            start = after + 2
        }
        return nil
    }

    private static func part(_ bytes: [UInt8]) -> Part? {
        guard let split = find(Array("\r\n\r\n".utf8), in: bytes, from: 0) else { return nil }
        var headers: [[UInt8]] = []
        var start = 0
        while let end = find(Array("\r\n".utf8), in: Array(bytes[..<split]), from: start) {
            headers.append(Array(bytes[start..<end]))
            start = end + 2
        }
        headers.append(Array(bytes[start..<split]))
        let prefix = Array("Content-Disposition: form-data; name=\"".utf8)
        guard let disposition = headers.first, disposition.starts(with: prefix) else { return nil }
        let name = disposition.dropFirst(prefix.count).prefix { $0 != UInt8(ascii: "\"") }
        return Part(headers: headers, name: Array(name), body: Array(bytes[(split + 4)...]))
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard haystack.count >= needle.count, start <= haystack.count - needle.count else { return nil }
        for index in start...(haystack.count - needle.count)
        where haystack[index] == needle[0] && haystack[index..<index + needle.count].elementsEqual(needle) {
            return index
        }
        return nil
    }
}

extension Array where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && self[(count - suffix.count)...].elementsEqual(suffix)
    }
}
