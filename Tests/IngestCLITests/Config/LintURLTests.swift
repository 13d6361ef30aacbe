import Foundation
import Testing

@testable import IngestTestSupport

/// `ingest lint` on URL templates (a note per value saying how it is encoded where it stands) and on test files
/// (`NAME.test.yml`, checked as `ingest test` reads them rather than refused as broken pipelines).
@Suite struct LintURLTests {
    let ingest = TestPaths.ingest
    static let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"

    @Test func eachURLTemplateValueGetsANoteNamingItsRule() throws {
        let folder = try TemporaryFolder("lint-url")
        defer { folder.remove() }
        let file = try folder.file(
            "p.yml",
            """
            version: 1
            name: urls
            stages:
              - request:
                  url: "https://api.test/t/{{file.path}}?name={{file.name}}&{{file.stem}}=1#{{dir.name}}"
                  as: ticket
              - upload: { method: put, url: "{{ticket.upload_url}}" }
              - request:
                  url: "{{ticket.base}}{{ticket.id}}?raw={{ticket.query | raw}}"
                  verify: { url: "https://{{env.HOST}}/read/{{ticket.id}}" }

            """)
        // HOST set: {{env.HOST}} unset would be a warning of its own (LintEnvironmentTests).
        let environment = ["PATH": Self.path, "HOST": "api.test"]
        let result = try runCommand(ingest, ["lint", file], environment: environment)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let expected = [
            "\(file):5:32: note: {{file.path}} is in the URL's path: percent-encoded, '/' kept as a separator",
            "\(file):5:51: note: {{file.name}} is a query value: percent-encoded, '&', '=', '#' and '+' included",
            "\(file):5:65: note: {{file.stem}} is a query parameter name: percent-encoded",
            "\(file):5:81: note: {{dir.name}} is in the URL's fragment: percent-encoded",
            "\(file):7:34: note: {{ticket.upload_url}} starts the URL (a whole URL, or its scheme and host): kept as "
                + "it is",
            "\(file):9:13: note: {{ticket.base}} starts the URL",
            "\(file):9:28: note: {{ticket.id}} follows {{ticket.base}}, which is kept as it is",
            "\(file):9:46: note: {{ticket.query | raw}} is sent as it is, not encoded",
            "\(file):10:31: note: {{env.HOST}} starts the URL (a whole URL, or its scheme and host): kept as it is",
            "\(file):10:49: note: {{ticket.id}} is in the URL's path",
        ]
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == expected.count + 1, "\(result.stdout)")
        for (line, start) in zip(lines, expected) { #expect(line.hasPrefix(start), "\(line)\nexpected: \(start)") }
        #expect(lines.last == "\(file): ok")
        // Notes are not warnings: --strict still passes.
        #expect(try runCommand(ingest, ["lint", "--strict", file], environment: environment).status == 0)
    }

    /// `ingest lint pipelines/*.yml`: the shipped test files are test files, and lint clean.
    @Test func shippedTestFilesLintAsTestFiles() throws {
        let folder = TestPaths.root + "/pipelines"
        let tests = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".test.yml") }
            .sorted()
        #expect(tests.count >= 6)
        let result = try runCommand(
            ingest, ["lint"] + tests.map { folder + "/" + $0 }, environment: ["PATH": Self.path])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(!result.stdout.contains("cases"), "\(result.stdout)")
        #expect(result.stdout == tests.map { "\(folder)/\($0): ok\n" }.joined(), "\(result.stdout)")
    }

    /// A broken test file gets the test file's own messages, at the line; a file of cases without `stages` is a
    /// test file whatever its name; a missing pipeline is named.
    @Test func brokenTestFilesNameTheirMistake() throws {
        let folder = try TemporaryFolder("lint-testfile")
        defer { folder.remove() }
        try folder.file("p.yml", "version: 1\nname: p\nstages:\n  - validate: { min_bytes: 1 }\n")
        try folder.file("a.jpg", "x")
        let cases: [(name: String, yaml: String, message: String)] = [
            (
                "p.test.yml",
                "pipeline: p.yml\ncases:\n  - input: a.jpg\n    expect: { status: passed, colour: red }\n",
                "p.test.yml:4:31: error: unknown key 'colour'; known: status, rule"
            ),
            (
                "q.test.yml", "pipeline: p.yml\ncase:\n  - input: a.jpg\n",
                "q.test.yml:2:1: error: unknown key 'case'; known: pipeline, env, stubs, cases (did you mean 'cases'?)"
            ),
            (
                "cases.yml", "pipeline: p.yml\ncases:\n  - input: b.jpg\n    expect: { status: passed }\n",
                "cases.yml:3:5: error: input \(folder.path)/b.jpg does not exist"
            ),
            (
                "r.test.yml", "cases:\n  - input: a.jpg\n    expect: { status: passed }\n",
                "r.test.yml: the pipeline it tests, \(folder.path)/r.yml, does not exist"
            ),
        ]
        for item in cases {
            let file = try folder.file(item.name, item.yaml)
            let result = try runCommand(ingest, ["lint", file], environment: ["PATH": Self.path])
            #expect(result.status == 2, "\(item.name): \(result.stdout)")
            #expect(result.stdout.contains(item.message), "\(item.name): \(result.stdout)")
            #expect(!result.stdout.contains("stages"), "\(item.name): \(result.stdout)")
        }
        let good = try folder.file("p.test.yml", "cases:\n  - input: a.jpg\n    expect: { status: passed }\n")
        let result = try runCommand(ingest, ["lint", good], environment: ["PATH": Self.path])
        #expect(result.status == 0 && result.stdout == "\(good): ok\n", "\(result.stdout)")
    }
}
