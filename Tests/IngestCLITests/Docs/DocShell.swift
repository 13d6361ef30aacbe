import Foundation
import Testing

@testable import IngestTestSupport

/// Runs the documents' commands as a reader would: `/bin/sh -c COMMAND` in a folder that has `pipelines/`,
/// `Samples/` and `Tests/` of this repository (symlinks) beside the files a test puts there, with the debug `ingest`
/// first on PATH. `export` commands run earlier in the same document carry over, as in a reader's shell.
final class DocShell {
    let folder: TemporaryFolder
    /// Variables set for every command (a fixture's port file instead of /tmp/port is set through `replacing`).
    var environment: [String: String]
    /// Text replaced in each command before it runs (`/tmp/port` → this test's port file), and nothing else.
    var replacing: [String: String] = [:]
    private var exports: [String] = []

    init(_ name: String) throws {
        folder = try TemporaryFolder("doc-" + name)
        for linked in ["pipelines", "Samples", "Tests"] {
            try FileManager.default.createSymbolicLink(
                atPath: folder.path + "/" + linked, withDestinationPath: TestPaths.root + "/" + linked)
        }
        let bin = (TestPaths.ingest as NSString).deletingLastPathComponent
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        environment = ["PATH": bin + ":" + path, "HOME": folder.path, "LANG": "C.UTF-8", "COLUMNS": "100"]
    }

    deinit { folder.remove() }

    /// The command of `file` whose text is `text`, as the document shows it now (a test that names a command the
    /// document no longer shows fails here, saying so).
    static func command(_ text: String, in file: String) throws -> DocCommand {
        let document = try String(contentsOfFile: TestPaths.root + "/" + file, encoding: .utf8)
        let found = DocCommands.commands(in: file, text: document).first { $0.text == text }
        return try #require(found, "\(file) no longer shows `\(text)`: update DocsCommandTests.tested and its test")
    }

    /// Runs the document's command `text`; where the document shows output, the command's standard output (and the
    /// lines marked `(standard error)`) must be that output, up to `DocOutput.normalised`.
    @discardableResult
    func run(_ text: String, in file: String, status: Int32? = nil) throws -> CommandResult {
        let command = try Self.command(text, in: file)
        var script = command.text
        for (from, to) in replacing { script = script.replacingOccurrences(of: from, with: to) }
        let result = try runCommand(
            "/bin/sh", ["-c", (exports + [script]).joined(separator: "\n")], environment: environment,
            directory: folder.path)
        if script.hasPrefix("export ") { exports.append(script) }
        if let status {
            #expect(result.status == status, "\(file):\(command.line): `\(text)`: \(result.stdout)\(result.stderr)")
        }
        if let shown = command.output {
            let difference = DocOutput.difference(shown: shown, stdout: result.stdout, stderr: result.stderr)
            #expect(
                difference == nil,
                "\(file):\(command.line): `\(text)` printed other than the document shows:\n\(difference ?? "")")
        }
        return result
    }
}

/// Compares a document's shown output with a run's, after normalising only what truly varies.
enum DocOutput {
    /// What varies between runs: loopback ports, the timing figures of the summary line, SigV4's dates, UUIDs the
    /// server makes up (`Visit ID: …`), a multipart form's random boundary and the temp folder.
    static func normalised(_ line: String) -> String {
        var text = line
        let rules: [(String, String)] = [
            (#"127\.0\.0\.1:[0-9]+"#, "127.0.0.1:PORT"),
            (#" in [0-9.]+(ms|s|m[0-9]+s|h[0-9]+m)?, [0-9.]+ [KMGT]?i?B/s"#, " in TIME, RATE"),
            (#"X-Amz-Date: [0-9]{8}T[0-9]{6}Z"#, "X-Amz-Date: DATE"),
            (#"(Credential=[^/]+)/[0-9]{8}/"#, "$1/DAY/"),
            (#"Visit ID: [0-9a-f-]{36}"#, "Visit ID: UUID"),
            (#"boundary=ingest-[0-9a-f]+"#, "boundary=ingest-RANDOM"),
            (#"/tmp/[^ ]*doc-[^/ ]+/"#, ""),
        ]
        for (pattern, replacement) in rules {
            text = text.replacingOccurrences(of: pattern, with: replacement, options: .regularExpression)
        }
        return text.trimmingCharacters(in: .whitespaces)
    }

    static let standardError = "(standard error)"

    /// nil when the run printed what the document shows. A shown line `…` stands for any lines; a line ending in
    /// `(standard error)` must be a line of standard error, the rest are standard output in order.
    static func difference(shown: [String], stdout: String, stderr: String) -> String? {
        let lines = shown.reversed().drop { $0.trimmingCharacters(in: .whitespaces).isEmpty }.reversed()
        let expectedErrors = lines.filter { $0.hasSuffix(standardError) }
            .map { normalised(String($0.dropLast(standardError.count))) }
        let expected = lines.filter { !$0.hasSuffix(standardError) }.map(normalised)
        let actual = stdout.split(separator: "\n", omittingEmptySubsequences: false).map { normalised(String($0)) }
            .reversed().drop(while: \.isEmpty).reversed()
        let errors = Set(stderr.split(separator: "\n").map { normalised(String($0)) })
        var problems: [String] = []
        if !matches(Array(expected), Array(actual)) {
            problems.append(
                "expected:\n" + expected.joined(separator: "\n") + "\nprinted:\n" + actual.joined(separator: "\n"))
        }
        for line in expectedErrors where !errors.contains(line) {
            problems.append("standard error has no line `\(line)`; it printed:\n\(stderr)")
        }
        return problems.isEmpty ? nil : problems.joined(separator: "\n")
    }

    /// `expected` against `actual` line by line, `…` matching any run of lines (none included).
    static func matches(_ expected: [String], _ actual: [String]) -> Bool {
        guard let first = expected.first else { return actual.isEmpty }
        if first == "…" {
            return (0...actual.count).contains { matches(Array(expected.dropFirst()), Array(actual.dropFirst($0))) }
        }
        guard let line = actual.first, line == first else { return false }
        return matches(Array(expected.dropFirst()), Array(actual.dropFirst()))
    }
}
