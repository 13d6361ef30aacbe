import Foundation

@testable import IngestCore
@testable import IngestTestSupport

/// A shell command a reader would copy from the documents, with the output the document shows after it (if any).
struct DocCommand: Sendable, Equatable {
    /// The document, relative to the package root.
    let file: String
    /// The line of the command (its first line when it continues with `\`).
    let line: Int
    /// The command as one line: `$ ` dropped, `\`-continued lines joined by one space, a trailing `# comment` cut.
    let text: String
    /// The lines the document shows after it in a console block, up to the next `$ ` line; nil when it shows none.
    let output: [String]?
    /// The reason in a `<!-- not-run: … -->` comment above the command's code block, if there is one.
    let notRun: String?
}

/// Finds the commands of README.md, ARCHITECTURE.md and docs/**/*.md. In a fenced block marked `sh`, `bash`,
/// `shell` or `console`, and in any other unmarked block, a line starting with `$ ` is a command and the lines
/// after it its output; in a `sh`, `bash` or `shell` block with no `$ ` line, every line that is not blank or a
/// comment is a command. Blocks of other languages (`yaml`, `swift` …) hold no commands.
enum DocCommands {
    static let shells: Set<String> = ["sh", "bash", "shell", "console"]

    static func all(root: String = TestPaths.root) throws -> [DocCommand] {
        try DocsLinkTests.documents().flatMap { file in
            commands(in: file, text: try String(contentsOfFile: root + "/" + file, encoding: .utf8))
        }
    }

    static func commands(in file: String, text: String) -> [DocCommand] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var found: [DocCommand] = []
        var index = 0
        while index < lines.count {
            let trimmed = lines[index].trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("```") else {
                index += 1
                continue
            }
            let language = String(trimmed.dropFirst(3)).trimmingCharacters(in: .whitespaces)
            var end = index + 1
            while end < lines.count && !lines[end].trimmingCharacters(in: .whitespaces).hasPrefix("```") { end += 1 }
            if language.isEmpty || shells.contains(language) {
                let body = Array(lines[(index + 1)..<min(end, lines.count)])
                found += commands(
                    in: body, file: file, firstLine: index + 2, shell: shells.contains(language),
                    notRun: marker(above: index, in: lines))
            }
            index = end + 1
        }
        return found
    }

    /// The reason of a `<!-- not-run: reason -->` on the nearest line above the fence that is not blank and not a
    /// `<!-- BEGIN … -->` marker.
    static func marker(above fence: Int, in lines: [String]) -> String? {
        var index = fence - 1
        while index >= 0 {
            let line = lines[index].trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("<!-- BEGIN ") {
                index -= 1
                continue
            }
            guard line.hasPrefix("<!-- not-run:"), line.hasSuffix("-->") else { return nil }
            let reason = line.dropFirst("<!-- not-run:".count).dropLast(3).trimmingCharacters(in: .whitespaces)
            return reason.isEmpty ? nil : reason
        }
        return nil
    }

    private static func commands(
        in body: [String], file: String, firstLine: Int, shell: Bool, notRun: String?
    ) -> [DocCommand] {
        let prompted = body.contains { $0.hasPrefix("$ ") }
        guard prompted || shell else { return [] }
        var found: [DocCommand] = []
        var index = 0
        while index < body.count {
            let line = body[index]
            let isCommand =
                prompted
                ? line.hasPrefix("$ ")
                : !line.trimmingCharacters(in: .whitespaces).isEmpty && !line.hasPrefix("#")
            guard isCommand else {
                index += 1
                continue
            }
            let start = index
            var parts = [prompted ? String(line.dropFirst(2)) : line]
            while parts[parts.count - 1].hasSuffix("\\") && index + 1 < body.count {
                parts[parts.count - 1].removeLast()
                index += 1
                parts.append(body[index])
            }
            index += 1
            var output: [String]? = nil
            if prompted {
                var shown: [String] = []
                while index < body.count && !body[index].hasPrefix("$ ") {
                    shown.append(body[index])
                    index += 1
                }
                output = shown
            }
            found.append(
                DocCommand(
                    file: file, line: firstLine + start, text: joined(parts), output: output, notRun: notRun))
        }
        return found
    }

    /// The physical lines of one command as one line, its trailing `# comment` cut (a `#` after a space).
    static func joined(_ parts: [String]) -> String {
        var text = parts.map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
        if let comment = text.range(of: #"\s+#\s.*$"#, options: .regularExpression) {
            text.removeSubrange(comment)
        }
        return text.trimmingCharacters(in: .whitespaces)
    }
}
