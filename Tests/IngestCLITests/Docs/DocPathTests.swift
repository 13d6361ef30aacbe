import Foundation
import Testing

@testable import IngestCore
@testable import IngestRun
@testable import IngestTestSupport

/// Every path of the repository that README.md, ARCHITECTURE.md and docs/**/*.md name (`Sources/…`, `Tests/…`,
/// `pipelines/…`, `docs/…`, `Benchmarks/…`, `scripts/…`, `contrib/…`, `Samples/…`, in prose or in code) exists: a
/// file moved to another target fails here. A pattern is a pattern when written as one: `*`, `**`, and `<name>` for
/// a part the reader fills in (`Sources/IngestStages/Stages/<Name>Stage.swift`).
@Suite struct DocPathTests {
    static let roots = ["Sources", "Tests", "pipelines", "docs", "Benchmarks", "scripts", "contrib", "Samples"]

    /// The repository paths named in `text`: a root folder at the start of a word (after a space, a backtick, a
    /// bracket or a quote, never inside a longer path or a URL), up to the first character no path here has; a
    /// sentence's final `.` and an ellipsis (`Sources/IngestRun/Watch/…`) are not part of it.
    static func paths(in text: String) -> [(path: String, line: Int)] {
        let pattern = try! NSRegularExpression(
            pattern: #"(?:^|(?<=[\s`(\["'|]))((?:"# + roots.joined(separator: "|") + #")/[A-Za-z0-9_.+<>*/@-]*)"#,
            options: .anchorsMatchLines)
        var found: [(String, Int)] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = String(line)
            for match in pattern.matches(in: line, range: NSRange(line.startIndex..., in: line)) {
                guard let range = Range(match.range(at: 1), in: line) else { continue }
                var path = String(line[range])
                while path.hasSuffix(".") { path.removeLast() }
                found.append((path, index + 1))
            }
        }
        return found
    }

    /// True when `path` (relative to `root`) names a file or folder, its `*`, `**` and `<…>` parts matching any name.
    static func exists(_ path: String, root: String) -> Bool {
        let segments = path.split(separator: "/").map(String.init)
        return matches(segments[...], in: root)
    }

    private static func matches(_ segments: ArraySlice<String>, in folder: String) -> Bool {
        guard let segment = segments.first else { return true }
        let rest = segments.dropFirst()
        if segment == "**" {
            if matches(rest, in: folder) { return true }
            return children(of: folder).contains {
                isFolder(folder + "/" + $0) && matches(segments, in: folder + "/" + $0)
            }
        }
        let isPattern = segment.contains("*") || segment.contains("<")
        guard isPattern else {
            let next = folder + "/" + segment
            return FileManager.default.fileExists(atPath: next) && matches(rest, in: next)
        }
        let regex =
            "^"
            + NSRegularExpression.escapedPattern(for: segment)
            .replacingOccurrences(of: #"<[^>]*>"#, with: ".+", options: .regularExpression)
            .replacingOccurrences(of: #"\*"#, with: ".*") + "$"
        return children(of: folder).contains {
            $0.range(of: regex, options: .regularExpression) != nil && matches(rest, in: folder + "/" + $0)
        }
    }

    private static func children(of folder: String) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
    }

    private static func isFolder(_ path: String) -> Bool {
        var folder: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &folder) && folder.boolValue
    }

    @Test func everyPathTheDocumentsNameExists() throws {
        var missing: [String] = []
        var count = 0
        for file in DocsLinkTests.documents() {
            let text = try String(contentsOfFile: TestPaths.root + "/" + file, encoding: .utf8)
            for (path, line) in Self.paths(in: text) {
                count += 1
                if !Self.exists(path, root: TestPaths.root) { missing.append("\(file):\(line): \(path)") }
            }
        }
        #expect(count > 50, "the checker found only \(count) paths")
        let list = missing.joined(separator: "\n")
        #expect(
            missing.isEmpty,
            "these paths do not exist (moved? write the new path, or a pattern with * or <name>):\n\(list)")
    }

    /// The checker finds paths in prose and code, passes patterns and placeholders that match, and fails a moved
    /// file, a missing folder under a pattern, and nothing inside a URL or a longer path.
    @Test func theCheckerFindsMovedPaths() {
        let text = """
            `Sources/Ingest/Watch/WatchTree.swift` and Sources/IngestRun/Watch/…, see `Tests/Fuzz/<target>/`.
            bash Benchmarks/upload.sh; pipelines/*.test.yml (https://x.org/docs/a) tools/ingest/Sources/** docs/nope/
            the template unit `contrib/ingest-watch@.service`.
            """
        let found = Self.paths(in: text)
        #expect(
            found.map(\.path) == [
                "Sources/Ingest/Watch/WatchTree.swift", "Sources/IngestRun/Watch/", "Tests/Fuzz/<target>/",
                "Benchmarks/upload.sh", "pipelines/*.test.yml", "docs/nope/", "contrib/ingest-watch@.service",
            ])
        let missing = found.filter { !Self.exists($0.path, root: TestPaths.root) }.map(\.path)
        #expect(missing == ["Sources/Ingest/Watch/WatchTree.swift", "docs/nope/"])
        #expect(Self.exists("Sources/**/Lint.swift", root: TestPaths.root))
        #expect(!Self.exists("Sources/**/NoSuchFile.swift", root: TestPaths.root))
    }
}
