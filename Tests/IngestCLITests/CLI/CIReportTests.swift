import Foundation
import Testing

@testable import IngestTestSupport

/// Reports for the places people run `ingest`: one JSON document for `--report x.json`, and GitHub Actions
/// annotations with a job summary for `--report-format github`.
@Suite struct CIReportTests {
    let ingest = TestPaths.ingest

    /// Two passing files and a failing one whose name needs escaping in a workflow command (`,` `:` `%`).
    func fixture() throws -> (TemporaryFolder, pipeline: String) {
        let folder = try TemporaryFolder("ci-report")
        try folder.file("media/a.txt", "hello")
        try folder.file("media/b.txt", "hello")
        try folder.file("media/sub/bad,name:100%.bin", "hello")
        let pipeline = try folder.file(
            "p.yml", "version: 1\nname: ci-test\nstages:\n  - validate: { extensions: [txt], sniff: false }\n")
        return (folder, pipeline)
    }

    @Test func jsonReportIsOneDocument() throws {
        let (folder, pipeline) = try fixture()
        defer { folder.remove() }
        let result = try runCommand(
            ingest, ["validate", pipeline, "media", "--report", "out.json", "-q"], directory: folder.path)
        #expect(result.status == 1, "\(result.stderr)")
        let data = try Data(contentsOf: URL(fileURLWithPath: folder.path + "/out.json"))
        let document = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(document["pipeline"] as? String == "ci-test")
        let files = try #require(document["files"] as? [[String: Any]])
        #expect(files.map { $0["status"] as? String } == ["passed", "passed", "failed"])
        #expect(files.map { $0["path"] as? String } == ["media/a.txt", "media/b.txt", "media/sub/bad,name:100%.bin"])
        let summary = try #require(document["summary"] as? [String: Int])
        #expect(summary == ["passed": 2, "failed": 1, "skipped": 0, "total": 3])

        // No file at all is still one document; `ingest report` writes it from the journal too.
        let empty = try runCommand(
            ingest, ["run", pipeline, "media/a.txt", "--report", "one.json", "-q"], directory: folder.path)
        #expect(empty.status == 0, "\(empty.stderr)")
        let fromJournal = try runCommand(ingest, ["report", "--output", "journal.json"], directory: folder.path)
        #expect(fromJournal.status == 0, "\(fromJournal.stderr)")
        let reread = try Data(contentsOf: URL(fileURLWithPath: folder.path + "/journal.json"))
        let again = try #require(try JSONSerialization.jsonObject(with: reread) as? [String: Any])
        #expect((again["files"] as? [Any])?.count == 1)
    }

    @Test func githubAnnotationsAndJobSummary() throws {
        let (folder, pipeline) = try fixture()
        defer { folder.remove() }
        let summaryPath = folder.path + "/step-summary.md"
        try "earlier step\n".write(toFile: summaryPath, atomically: true, encoding: .utf8)
        var environment = ProcessInfo.processInfo.environment
        environment["GITHUB_STEP_SUMMARY"] = summaryPath
        environment["GITHUB_WORKSPACE"] = folder.path
        let result = try runCommand(
            ingest, ["validate", pipeline, folder.path + "/media", "--report-format", "github"],
            environment: environment, directory: folder.path)
        #expect(result.status == 1, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        // The table stays for the log; each broken rule adds a workflow command, paths relative to the workspace.
        #expect(lines.first?.hasPrefix("ok    \(folder.path)/media/a.txt") == true)
        #expect(
            lines.contains(
                "::error file=media/sub/bad%2Cname%3A100%25.bin,title=ci-test%3A validate.extensions::"
                    + "validate.extensions: extension .bin is not allowed"), "\(lines)")
        #expect(lines.last == "2 passed, 1 failed, 0 skipped")
        let summary = try String(contentsOfFile: summaryPath, encoding: .utf8)
        #expect(summary.hasPrefix("earlier step\n### ❌ ingest: ci-test\n\n2 passed, 1 failed, 0 skipped\n"))
        #expect(
            summary.contains(
                "| media/sub/bad,name:100%.bin | validate.extensions | extension .bin is not allowed |"), "\(summary)")
    }

    @Test func workflowCommandEscaping() throws {
        let (folder, _) = try fixture()
        defer { folder.remove() }
        // A message with a line break and a percent sign stays one command; the rule's text is escaped once.
        let pipeline = try folder.file(
            "p2.yml", "version: 1\nname: \"a,b\"\nstages:\n  - validate: { min_bytes: 100 }\n")
        var environment = ProcessInfo.processInfo.environment
        environment["GITHUB_STEP_SUMMARY"] = nil
        let result = try runCommand(
            ingest, ["validate", pipeline, "media/a.txt", "--report-format", "github"], environment: environment,
            directory: folder.path)
        #expect(result.status == 1)
        let command = try #require(result.stdout.split(separator: "\n").first { $0.hasPrefix("::error ") })
        #expect(command.hasPrefix("::error file=media/a.txt,title=a%2Cb%3A validate.min_bytes::validate.min_bytes: "))
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/step-summary.md"))
    }

    @Test func reportFormatValuesComplete() throws {
        let script = try runCommand(ingest, ["--generate-completion-script", "bash"])
        #expect(script.status == 0)
        let values = ["table", "jsonl", "json", "junit", "github", "html"].map { "'\($0)'" }.joined(separator: "$'\\n'")
        let offered = script.stdout.components(separatedBy: "'--report-format')\n").dropFirst()
        #expect(offered.count == 3, "run, validate and watch")
        for completion in offered { #expect(completion.contains("-W \(values)\n"), "\(completion.prefix(300))") }
    }

    /// `make install` builds the release product and copies it to PREFIX/bin. `SWIFT` is a stand-in that logs the
    /// build it is asked for and points `--show-bin-path` at the binary these tests built (a release build of the
    /// whole package takes minutes).
    @Test func makeInstallCopiesTheReleaseBuild() throws {
        let folder = try TemporaryFolder("make-install")
        defer { folder.remove() }
        let bin = (ingest as NSString).deletingLastPathComponent
        let swift = try folder.file(
            "swift",
            """
            #!/bin/sh
            case "$*" in *--show-bin-path*) echo '\(bin)' ;; *) echo "swift $*" >> '\(folder.path)/log' ;; esac

            """)
        chmod(swift, 0o755)
        // `-o deps`: not the apt and pip checks (3 s of CPU importing moto and asking pip), which `make test` ran.
        let make = try runCommand(
            "/usr/bin/env", ["make", "-s", "-o", "deps", "install", "SWIFT=\(swift)", "PREFIX=\(folder.path)/prefix"],
            directory: TestPaths.root)
        #expect(make.status == 0, "\(make.stdout)\(make.stderr)")
        let log = (try? String(contentsOfFile: folder.path + "/log", encoding: .utf8)) ?? ""
        #expect(log == "swift build -c release --product ingest\n")
        let installed = folder.path + "/prefix/bin/ingest"
        #expect(FileManager.default.isExecutableFile(atPath: installed))
        #expect(try runCommand(installed, ["--version"]).stdout.hasPrefix("ingest 0.1.0\n"))
    }
}
