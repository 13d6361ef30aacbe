import Foundation

/// A multipart/form-data body (RFC 7578) for an S3 presigned POST: the fields in the given order, then the file
/// part last (S3 ignores fields after the file). Only the head and tail are in memory; the file streams between.
package struct MultipartForm {
    package let boundary: String
    package let head: [UInt8]
    package let tail: [UInt8]

    package init(fields: [(String, String)], fileName: String, fileType: String, fileField: String = "file") {
        // A boundary must not occur in any part; a random one practically never does, but check anyway.
        let everything = fields.map { $0.0 + $0.1 }.joined() + fileName + fileType
        var candidate: String
        repeat {
            candidate = "ingest-" + (0..<24).map { _ in String("0123456789abcdef".randomElement()!) }.joined()
        } while everything.contains(candidate)
        boundary = candidate
        var text = ""
        for (name, value) in fields {
            text += "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(Self.quoted(name))\"\r\n\r\n\(value)\r\n"
        }
        text += "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(Self.quoted(fileField))\"; "
        // A type with CR or LF (from a ticket or a template) would end the part's headers early: drop them.
        let type = String(String.UnicodeScalarView(fileType.unicodeScalars.filter { $0 != "\r" && $0 != "\n" }))
        text += "filename=\"\(Self.quoted(fileName))\"\r\nContent-Type: \(type)\r\n\r\n"
        head = Array(text.utf8)
        tail = Array("\r\n--\(boundary)--\r\n".utf8)
    }

    /// RFC 7578 §4.2: in a quoted name, `"` and CR/LF are percent-encoded (as browsers do).
    package static func quoted(_ text: String) -> String {
        text.replacingOccurrences(of: "\"", with: "%22").replacingOccurrences(of: "\r", with: "%0D")
            .replacingOccurrences(of: "\n", with: "%0A")
    }
}
