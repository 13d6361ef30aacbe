/// Text safe in HTML elements and double- or single-quoted attributes; C0 controls other than tab and newline
/// (which HTML forbids) become U+FFFD.
func htmlEscape(_ text: String) -> String {
    markupEscape(text, apostrophe: "&#39;") { scalar in
        scalar != "\n" && scalar != "\t" && (scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value))
    }
}

/// Text safe inside XML attributes and elements; characters XML 1.0 forbids become U+FFFD.
func xmlEscape(_ text: String) -> String {
    markupEscape(text, apostrophe: "&apos;") { scalar in
        scalar != "\n" && scalar != "\r" && scalar != "\t"
            && (scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF)
    }
}

/// The five markup characters as entities (`'` as the dialect writes it) and what `forbids` as U+FFFD.
private func markupEscape(_ text: String, apostrophe: String, forbids: (Unicode.Scalar) -> Bool) -> String {
    var out = ""
    out.reserveCapacity(text.utf8.count)
    out.append(text) { scalar in
        switch scalar {
        case "&": "&amp;"
        case "<": "&lt;"
        case ">": "&gt;"
        case "\"": "&quot;"
        case "'": apostrophe
        default: forbids(scalar) ? "\u{FFFD}" : nil
        }
    }
    return out
}
