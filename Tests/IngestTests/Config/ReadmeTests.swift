import Foundation
import Testing

@testable import Ingest
@testable import IngestConfig

/// The documents' generated sections are what the code says today: the pipeline reference
/// (docs/pipeline-reference.md) comes from the option declarations, the CLI reference (docs/command-line.md) from
/// `--help`, the README's demo from running it over Samples/.
/// `INGEST_UPDATE_README=1 swift test --filter ReadmeTests` rewrites them.
@Suite(.serialized) struct ReadmeTests {
    static var updating: Bool { ProcessInfo.processInfo.environment["INGEST_UPDATE_README"] == "1" }

    /// The text between `<!-- BEGIN name -->` and `<!-- END name -->`.
    static func section(_ name: String, in text: String) -> String? {
        guard let begin = text.range(of: "<!-- BEGIN \(name) -->\n"),
            let end = text.range(of: "<!-- END \(name) -->", range: begin.upperBound..<text.endIndex)
        else { return nil }
        return String(text[begin.upperBound..<end.lowerBound])
    }

    /// Checks the section `name` of the document at `file` (relative to the package root).
    static func check(_ name: String, in file: String, expected: String) throws {
        let path = TestPaths.root + "/" + file
        var text = try String(contentsOfFile: path, encoding: .utf8)
        if updating, let begin = text.range(of: "<!-- BEGIN \(name) -->\n"),
            let end = text.range(of: "<!-- END \(name) -->", range: begin.upperBound..<text.endIndex)
        {
            text.replaceSubrange(begin.upperBound..<end.lowerBound, with: expected)
            try text.write(toFile: path, atomically: true, encoding: .utf8)
        }
        let committed = try #require(section(name, in: text), "\(file) has no \(name) section")
        #expect(
            committed == expected,
            "\(file)'s \(name) section is stale: run INGEST_UPDATE_README=1 swift test --filter ReadmeTests")
    }

    @Test func pipelineReference() throws {
        try Self.check("pipeline-reference", in: "docs/pipeline-reference.md", expected: Pipeline.markdownReference)
    }

    @Test func cliReference() throws {
        var expected = ""
        for command in [
            "run", "validate", "probe", "lint", "schema", "presign put", "presign post", "status", "report", "test",
        ] {
            let words = command.split(separator: " ").map(String.init)
            let help = try runCommand(TestPaths.ingest, words + ["--help"], environment: ["COLUMNS": "100"])
            #expect(help.status == 0)
            expected += "### `ingest \(command)`\n\n```\n\(help.stdout.trimmingCharacters(in: .newlines))\n```\n\n"
        }
        try Self.check("cli-reference", in: "docs/command-line.md", expected: expected)
    }

    @Test func demoOutput() throws {
        let demo = try runCommand(
            TestPaths.ingest, ["validate", "pipelines/preflight.yml", "Samples/"], directory: TestPaths.root)
        #expect(demo.status == 1, "the bad samples must fail: \(demo.stderr)")
        #expect(demo.stdout.contains(" passed, "))
        try Self.check(
            "demo", in: "README.md",
            expected: "```\n$ ingest validate pipelines/preflight.yml Samples/\n\(demo.stdout)```\n")
    }
}
