import Foundation
import Testing

@testable import IngestConfig
@testable import IngestCore
@testable import IngestTestSupport

/// The documents' generated sections are what the code says today: the pipeline reference
/// (docs/pipeline-reference.md) comes from the option declarations, the CLI reference (docs/command-line.md) from
/// `--help`, the README's demo from running it over Samples/.
/// `INGEST_UPDATE_README=1 swift test --filter ReadmeTests` rewrites them.
@Suite(.serialized) struct ReadmeTests {
    static var updating: Bool { ProcessInfo.processInfo.environment["INGEST_UPDATE_README"] == "1" }

    /// The text between `<!-- BEGIN name -->` and `<!-- END name -->`.
    static func section(_ name: String, in text: String) -> String? {
        markedSection(name, in: text)
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

    /// The names under `SUBCOMMANDS:` of `ingest WORDS --help`, in its order (`(default)` dropped).
    static func subcommands(_ words: [String]) throws -> [String] {
        let help = try runCommand(TestPaths.ingest, words + ["--help"], environment: ["COLUMNS": "100"])
        guard let start = help.stdout.range(of: "SUBCOMMANDS:\n") else { return [] }
        return help.stdout[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false)
            .prefix { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
            .compactMap { line in
                line.hasPrefix("  ") && !line.hasPrefix("   ") ? line.split(separator: " ").first : nil
            }
            .map(String.init)
    }

    /// Every command `ingest --help` lists (a group's as `presign put`), so a new command gets its section.
    static func commands() throws -> [String] {
        try subcommands([]).filter { $0 != "help" }.flatMap { name in
            let nested = try subcommands([name])
            return nested.isEmpty ? [name] : nested.map { "\(name) \($0)" }
        }
    }

    @Test func cliReference() throws {
        var expected = ""
        let commands = try Self.commands()
        #expect(commands.contains("watch") && commands.contains("presign put"), "\(commands)")
        let document = try String(contentsOfFile: TestPaths.root + "/docs/command-line.md", encoding: .utf8)
        let listed = document.components(separatedBy: "\n\n").first { $0.hasPrefix("The commands are ") } ?? ""
        for command in commands {
            let word = String(command.prefix { $0 != " " })
            #expect(listed.contains("`\(word)"), "docs/command-line.md's first paragraph does not name `\(word)`")
        }
        for command in commands {
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
