/// Text from outside (file names, rule messages that quote them, server answers) made safe to print for people: a
/// name holding a newline, `ok    holiday.mov` and `ESC[8m` would otherwise print a forged `ok` line and hide the
/// real failure. JSON Lines and JUnit escape on their own; every human line (the table, progress, `status`, `probe`)
/// goes through here.
package enum TerminalText {
    /// C0 controls, DEL and C1 controls (U+0080–U+009F) as escapes (`\n`, `\r`, `\t`, else `\x1b`), and a
    /// backslash doubled so an escape cannot be forged either; everything else unchanged.
    package static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var out = ""
        out.append(text) { scalar in
            guard needsEscape(scalar) else { return nil }
            switch scalar {
            case "\n": return "\\n"
            case "\r": return "\\r"
            case "\t": return "\\t"
            case "\\": return "\\\\"
            default:
                let hex = String(scalar.value, radix: 16)
                return "\\x" + (hex.count < 2 ? "0" + hex : hex)
            }
        }
        return out
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar == "\\"
    }
}
