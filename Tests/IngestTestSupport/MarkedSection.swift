import Foundation

/// The text between `<!-- BEGIN name -->` and `<!-- END name -->` in a document (README.md, docs/…), the parts the
/// tests keep equal to what the code prints or holds; nil when the markers are missing.
func markedSection(_ name: String, in text: String) -> String? {
    guard let begin = text.range(of: "<!-- BEGIN \(name) -->\n"),
        let end = text.range(of: "<!-- END \(name) -->", range: begin.upperBound..<text.endIndex)
    else { return nil }
    return String(text[begin.upperBound..<end.lowerBound])
}
