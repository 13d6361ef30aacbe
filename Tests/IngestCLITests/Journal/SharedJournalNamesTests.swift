import Foundation
import Testing

@testable import IngestTestSupport

/// A journal two pipelines share: `ingest status` and `ingest report` show each file under its own pipeline, not
/// everything under the name of the pipeline run last.
@Suite struct SharedJournalNamesTests {
    let ingest = TestPaths.ingest

    func twoPipelines() throws -> TemporaryFolder {
        let folder = try TemporaryFolder("journal-names")
        try folder.file("photos/a.txt", "a")
        try folder.file("photos/b.bin", "b")
        try folder.file("clips/c.txt", "c")
        try folder.file(
            "first.yml", "version: 1\nname: first\nstages:\n  - validate: { extensions: [txt], sniff: false }\n")
        try folder.file(
            "second.yml", "version: 1\nname: second\nstages:\n  - validate: { extensions: [txt], sniff: false }\n")
        let first = try runCommand(ingest, ["run", "first.yml", "photos", "-q"], directory: folder.path)
        #expect(first.status == 1)
        let second = try runCommand(ingest, ["run", "second.yml", "clips", "-q"], directory: folder.path)
        #expect(second.status == 0)
        return folder
    }

    @Test func statusNamesEachFilesPipeline() throws {
        let folder = try twoPipelines()
        defer { folder.remove() }
        let status = try runCommand(ingest, ["status"], directory: folder.path)
        #expect(status.status == 1)
        #expect(
            status.stdout.hasPrefix("journal .ingest/journal.sqlite (pipelines first, second)\n"), "\(status.stdout)")
        #expect(status.stdout.contains("  first: 1 done, 1 failed\n  second: 1 done\n"), "\(status.stdout)")
        #expect(status.stdout.contains("FAIL  photos/b.bin  [pipeline first]\n"), "\(status.stdout)")
    }

    @Test func reportHasASuitePerPipeline() throws {
        let folder = try twoPipelines()
        defer { folder.remove() }
        let junit = try runCommand(ingest, ["report", "--format", "junit"], directory: folder.path)
        #expect(junit.status == 1)
        #expect(junit.stdout.contains(#"<testsuites name="ingest" tests="3" failures="1" skipped="0">"#))
        #expect(junit.stdout.contains(#"<testsuite name="first" tests="2" failures="1" errors="0" skipped="0">"#))
        #expect(junit.stdout.contains(#"<testsuite name="second" tests="1" failures="0" errors="0" skipped="0">"#))
        #expect(
            junit.stdout.contains(#"<testcase classname="second" name="clips/c.txt" file="clips/c.txt" time="#),
            "\(junit.stdout)")
        #expect(junit.stdout.components(separatedBy: "<testsuite ").count == 3)

        let lines = try runCommand(ingest, ["report", "--format", "jsonl"], directory: folder.path).stdout
            .split(separator: "\n")
        let named = try lines.map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }.map { "\($0["path"] ?? "") \($0["pipeline"] ?? "")" }
        #expect(named == ["clips/c.txt second", "photos/a.txt first", "photos/b.bin first"])

        let table = try runCommand(ingest, ["report"], directory: folder.path).stdout
        #expect(table.contains("ok    clips/c.txt  [pipeline second]\n"), "\(table)")
    }

    /// One pipeline: the output is as before, with no pipeline labels.
    @Test func onePipelineIsUnlabelled() throws {
        let folder = try TemporaryFolder("journal-names-one")
        defer { folder.remove() }
        try folder.file("photos/a.txt", "a")
        try folder.file("first.yml", "version: 1\nname: first\nstages:\n  - validate: { sniff: false }\n")
        #expect(try runCommand(ingest, ["run", "first.yml", "photos", "-q"], directory: folder.path).status == 0)
        let status = try runCommand(ingest, ["status"], directory: folder.path).stdout
        #expect(status.hasPrefix("journal .ingest/journal.sqlite (pipeline first)\n"))
        #expect(!status.contains("first:"))
        let jsonl = try runCommand(ingest, ["report", "--format", "jsonl"], directory: folder.path).stdout
        #expect(!jsonl.contains("\"pipeline\""))
    }
}
