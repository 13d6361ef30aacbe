import Foundation
import Testing

@testable import IngestTestSupport

/// Every relative link in the documents (README.md, ARCHITECTURE.md, docs/**/*.md) points at a file of the
/// repository, and each `#anchor` at a heading of its page: a page moved or a heading renamed fails here.
@Suite struct DocsLinkTests {
    /// The Markdown files a reader navigates, relative to the package root.
    static func documents() -> [String] {
        var found = ["README.md", "ARCHITECTURE.md"]
        let docs = TestPaths.root + "/docs"
        for case let name as String in FileManager.default.enumerator(atPath: docs)?.allObjects ?? []
        where name.hasSuffix(".md") {
            found.append("docs/" + name)
        }
        return found.sorted()
    }

    /// The text outside fenced code blocks, inline code spans and HTML comments, where a link is a link.
    static func prose(_ text: String) -> String {
        var kept: [Substring] = []
        var fenced = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") {
                fenced.toggle()
            } else if !fenced {
                kept.append(line)
            }
        }
        return kept.joined(separator: "\n")
            .replacingOccurrences(of: "<!--[\\s\\S]*?-->", with: "", options: .regularExpression)
            .replacingOccurrences(of: "`[^`\n]*`", with: "", options: .regularExpression)
    }

    /// The targets of `[text](target)` and `![alt](target)` links.
    static func links(in text: String) -> [String] {
        let pattern = try! NSRegularExpression(pattern: #"\]\(([^)\s]+)(?:\s+"[^"]*")?\)"#)
        let prose = prose(text)
        let range = NSRange(prose.startIndex..., in: prose)
        return pattern.matches(in: prose, range: range).compactMap { match in
            Range(match.range(at: 1), in: prose).map { String(prose[$0]) }
        }
    }

    /// GitHub's anchors for the headings of a Markdown page: lower case, punctuation dropped, spaces as `-`, a
    /// repeated heading numbered (`-1`, `-2`).
    static func anchors(of text: String) -> Set<String> {
        var seen: [String: Int] = [:]
        var anchors = Set<String>()
        var fenced = false
        for line in text.split(separator: "\n") {
            if line.hasPrefix("```") { fenced.toggle() }
            guard !fenced, let hashes = line.firstIndex(where: { $0 != "#" }), hashes != line.startIndex,
                line[hashes] == " "
            else { continue }
            var slug = ""
            for character in line[hashes...].trimmingCharacters(in: .whitespaces).lowercased() {
                if character == " " {
                    slug.append("-")
                } else if character.isLetter || character.isNumber || character == "-" || character == "_" {
                    slug.append(character)
                }
            }
            let count = seen[slug, default: 0]
            seen[slug] = count + 1
            anchors.insert(count == 0 ? slug : "\(slug)-\(count)")
        }
        return anchors
    }

    /// What is wrong with each relative link of the document at `file` (relative to `root`), given its text.
    static func brokenLinks(in file: String, text: String, root: String) -> [String] {
        let folder = (file as NSString).deletingLastPathComponent
        var broken: [String] = []
        for link in links(in: text)
        where link.range(of: "^[a-zA-Z][a-zA-Z0-9+.-]*:", options: .regularExpression) == nil {
            let parts = link.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            let relative = parts[0].removingPercentEncoding ?? parts[0]
            let target =
                relative.isEmpty
                ? file : ((folder as NSString).appendingPathComponent(relative) as NSString).standardizingPath
            let path = root + "/" + target
            guard !target.hasPrefix(".."), FileManager.default.fileExists(atPath: path) else {
                broken.append("\(file): \(link): no file \(target)")
                continue
            }
            guard parts.count == 2, target.hasSuffix(".md") else { continue }
            let page = relative.isEmpty ? text : (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            if !anchors(of: page).contains(parts[1]) {
                broken.append("\(file): \(link): \(target) has no heading #\(parts[1])")
            }
        }
        return broken
    }

    @Test func everyRelativeLinkPointsAtAFileAndHeading() throws {
        let documents = Self.documents()
        #expect(documents.contains("docs/README.md"), "\(documents)")
        var broken: [String] = []
        for file in documents {
            let text = try String(contentsOfFile: TestPaths.root + "/" + file, encoding: .utf8)
            broken += Self.brokenLinks(in: file, text: text, root: TestPaths.root)
        }
        #expect(broken.isEmpty, "\(broken.joined(separator: "\n"))")
    }

    /// The checker itself finds a missing file, a missing heading and a link out of the repository, and passes
    /// links that are fine (a heading with code and punctuation, a link inside a code block is no link).
    @Test func theCheckerFindsBrokenLinks() {
        let text = """
            # A page
            ## Seeing what a run does: `-v`, timings
            [ok](#a-page) [ok](#seeing-what-a-run-does--v-timings) [ok](README.md) [web](https://example.com/x)
            [gone](docs/no-such-page.md) [no heading](#nowhere) [outside](../elsewhere.md)
            ```
            [in code](missing.md)
            ```
            """
        let broken = Self.brokenLinks(in: "README.md", text: text, root: TestPaths.root)
        #expect(broken.count == 3, "\(broken)")
        #expect(broken.contains { $0.contains("docs/no-such-page.md") }, "\(broken)")
        #expect(broken.contains { $0.contains("#nowhere") }, "\(broken)")
        #expect(broken.contains { $0.contains("../elsewhere.md") }, "\(broken)")
    }
}
