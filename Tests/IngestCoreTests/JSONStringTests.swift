import Testing

@testable import IngestCore

/// JSON strings are read and written in one piece when they need no escape (a rerun's reports and journal records
/// are mostly such strings); the escaped ones must come out exactly as before, whatever sits around the escapes.
@Suite struct JSONStringTests {
    @Test(arguments: [
        (#""plain/path/clip.mov""#, "plain/path/clip.mov"),
        (#""before\nafter""#, "before\nafter"),
        (#""a \"quoted\" word""#, "a \"quoted\" word"),
        (#""caf\u00e9 and café""#, "café and café"),
        (#""\ud83c\udfd2 hockey""#, "🏒 hockey"),
        (#""tail escape\\""#, "tail escape\\"),
        (#""\/slash\tand\ttabs""#, "/slash\tand\ttabs"),
        (#""""#, ""),
    ])
    func parsesTheSameWithAndWithoutEscapes(json: String, text: String) throws {
        #expect(try JSONValue.parse(json) == .string(text))
    }

    @Test(arguments: ["\"no end", "\"before \\", "\"bad \\q escape\"", "\"raw\ncontrol\"", "\"ab\\u12\""])
    func refusesBrokenStrings(json: String) {
        #expect(throws: (any Error).self) { try JSONValue.parse(json) }
    }

    @Test(arguments: ["plain", "line\nbreak", "quote \" and \\ backslash", "bell \u{07}", "café 🏒", ""])
    func writtenStringsReadBack(text: String) throws {
        var out = ""
        JSONValue.writeString(text, to: &out)
        #expect(try JSONValue.parse(out) == .string(text))
        #expect(!out.dropFirst().dropLast().contains("\n"))
    }
}
