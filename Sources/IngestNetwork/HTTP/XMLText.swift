import Foundation

/// The one XML reader for what servers send back (S3's `<Error><Code>…`, `<UploadId>`, `<ETag>`): the text of the
/// first element of a name, unescaped. Enough for the flat, small answers S3 and its kin give, with no parser.
enum XMLText {
    /// The text of the first `<name>…</name>`, with the named entities and then the numeric references (`&#34;`,
    /// `&#x22;`, as Go's encoder writes quotes) decoded; nil when the element is absent.
    static func element(_ name: String, in text: String) -> String? {
        guard let open = text.range(of: "<\(name)>"),
            let close = text.range(of: "</\(name)>", range: open.upperBound..<text.endIndex)
        else { return nil }
        var value = String(text[open.upperBound..<close.lowerBound])
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&apos;", with: "'")
            .replacingOccurrences(of: "&amp;", with: "&")
        while let start = value.range(of: "&#"),
            let end = value.range(of: ";", range: start.upperBound..<value.endIndex)
        {
            let digits = value[start.upperBound..<end.lowerBound]
            let number =
                digits.hasPrefix("x") || digits.hasPrefix("X") ? UInt32(digits.dropFirst(), radix: 16) : UInt32(digits)
            guard let number, let scalar = Unicode.Scalar(number) else { break }
            value.replaceSubrange(start.lowerBound..<end.upperBound, with: String(Character(scalar)))
        }
        return value
    }

    /// Text made safe inside an element or a quoted attribute (`&`, `<`, `>`, `"`).
    static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
