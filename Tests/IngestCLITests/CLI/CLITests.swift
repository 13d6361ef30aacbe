import Foundation
import Testing

@testable import IngestCore
@testable import IngestTestSupport

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// The `ingest` executable as scripts and CI use it: exit codes, report formats, usage errors.
@Suite struct CLITests {
    let ingest = TestPaths.ingest

    /// A folder with two passing text files and one failing one, and a pipeline that checks extensions.
    func fixture() throws -> (TemporaryFolder, pipeline: String) {
        let folder = try TemporaryFolder("cli")
        try folder.file("media/a.txt", "hello")
        try folder.file("media/b.txt", "hello")
        try folder.file("media/sub/c.bin", "hello")
        let pipeline = try folder.file(
            "p.yml", "version: 1\nname: cli-test\nstages:\n  - validate: { extensions: [txt], sniff: false }\n")
        return (folder, pipeline)
    }

    @Test func exitCodesAndTable() throws {
        let (folder, pipeline) = try fixture()
        defer { folder.remove() }
        let failing = try runCommand(ingest, ["validate", pipeline, folder.path + "/media"])
        #expect(failing.status == 1)
        let lines = failing.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("ok    \(folder.path)/media/a.txt") == true)
        #expect(lines.contains { $0.hasPrefix("FAIL  \(folder.path)/media/sub/c.bin") })
        #expect(lines.contains("      validate.extensions: extension .bin is not allowed (expected .txt)"))
        #expect(lines.last == "2 passed, 1 failed, 0 skipped")

        let passing = try runCommand(
            ingest, ["run", pipeline, folder.path + "/media/a.txt", folder.path + "/media/b.txt"],
            directory: folder.path)
        #expect(passing.status == 0)
        #expect(passing.stdout.hasSuffix("2 passed, 0 failed, 0 skipped\n"))
    }

    @Test func jsonLinesReport() throws {
        let (folder, pipeline) = try fixture()
        defer { folder.remove() }
        let report = folder.path + "/out/report.jsonl"
        try FileManager.default.createDirectory(atPath: folder.path + "/out", withIntermediateDirectories: true)
        let result = try runCommand(ingest, ["validate", pipeline, folder.path + "/media", "--report", report, "-q"])
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        let lines = try String(contentsOfFile: report, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 3)
        let objects = try lines.map {
            try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(objects.map { $0["status"] as? String } == ["passed", "passed", "failed"])
        #expect(
            objects.map { $0["path"] as? String }
                == ["a.txt", "b.txt", "sub/c.bin"].map { folder.path + "/media/" + $0 })
        let failures = try #require(objects[2]["failures"] as? [[String: Any]])
        #expect(failures.first?["stage"] as? String == "validate")
        #expect(failures.first?["rule"] as? String == "extensions")
        #expect(failures.first?["message"] as? String == "extension .bin is not allowed")
        // Nothing but the report is left in its folder (the temp file was renamed over it).
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path + "/out") == ["report.jsonl"])
    }

    @Test func junitReportParses() throws {
        let (folder, pipeline) = try fixture()
        defer { folder.remove() }
        let report = folder.path + "/report.xml"
        let result = try runCommand(ingest, ["validate", pipeline, folder.path + "/media", "--report", report])
        #expect(result.status == 1)
        #expect(result.stdout.hasSuffix("2 passed, 1 failed, 0 skipped\n"))
        let document = try XMLDocument(contentsOf: URL(fileURLWithPath: report))
        let suite = try #require(try document.nodes(forXPath: "/testsuites/testsuite").first as? XMLElement)
        #expect(suite.attribute(forName: "name")?.stringValue == "cli-test")
        #expect(suite.attribute(forName: "tests")?.stringValue == "3")
        #expect(suite.attribute(forName: "failures")?.stringValue == "1")
        let cases = try document.nodes(forXPath: "//testcase")
        #expect(cases.count == 3)
        let failures = try document.nodes(forXPath: "//testcase/failure")
        #expect(failures.count == 1)
        let failure = try #require(failures.first as? XMLElement)
        #expect(failure.attribute(forName: "type")?.stringValue == "validate.extensions")
        #expect(
            (failure.parent as? XMLElement)?.attribute(forName: "name")?.stringValue == folder.path + "/media/sub/c.bin"
        )
    }

    @Test func invalidPipelineIsAUsageErrorWithItsPlace() throws {
        let folder = try TemporaryFolder("cli-bad")
        defer { folder.remove() }
        let pipeline = try folder.file("bad.yml", "version: 1\nname: x\nstages:\n  - validate: { max_byte: 1MB }\n")
        let result = try runCommand(ingest, ["validate", pipeline, folder.path])
        #expect(result.status == 2)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("\(pipeline):4:17: error: validate: unknown option 'max_byte'"))
        #expect(result.stderr.contains("(did you mean 'max_bytes'?)"))

        let lint = try runCommand(ingest, ["lint", pipeline])
        #expect(lint.status == 2)
        #expect(lint.stdout.contains("\(pipeline):4:17: error:"))
        let good = try runCommand(ingest, ["lint", TestPaths.root + "/pipelines/preflight.yml"])
        #expect(good.status == 0)
    }

    @Test func usageErrorsExitTwo() throws {
        #expect(try runCommand(ingest, ["validate"]).status == 2)
        #expect(try runCommand(ingest, ["frobnicate"]).status == 2)
        #expect(try runCommand(ingest, ["validate", "p.yml", "--report-format", "pdf"]).status == 2)
        let help = try runCommand(ingest, ["--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("2  usage error, or the pipeline file is invalid"))
    }

    @Test func unwritableReportIsAnIOError() throws {
        let (folder, pipeline) = try fixture()
        defer { folder.remove() }
        let result = try runCommand(
            ingest, ["validate", pipeline, folder.path + "/media", "--report", folder.path + "/no/such/dir/r.jsonl"])
        #expect(result.status == 3)
        #expect(result.stderr.contains("cannot write the report"))
        #expect(result.stderr.contains("/no/such/dir/r.jsonl"))
    }

    /// The seed pipelines in CI, without the backend's secrets: `validate` makes no request, so it needs none of
    /// the variables only `request`/`upload` read and checks the files; `run` names each missing one and stops
    /// before any file is touched (no work folder, no journal).
    @Test(arguments: [
        (
            "vet-audio", "good/voice.m4a", "3f2a9c1e-8b4d-4e6f-9a7b-1c2d3e4f5a6b/visit.m4a",
            ["HELPPET_API", "HELPPET_TOKEN"]
        ),
        (
            "hockey-video-signed-put", "good/plain.mov", "game/plain.mov",
            ["PUCKBUDDY_BACKEND", "PUCKBUDDY_USER_ID", "FIREBASE_PROJECT", "FIREBASE_TOKEN"]
        ),
    ])
    func seedPipelinesValidateWithoutNetworkVariables(
        pipeline: String, sample: String, relativePath: String, variables: [String]
    ) throws {
        let folder = try TemporaryFolder("cli-offline")
        defer { folder.remove() }
        let input = folder.path + "/media/" + relativePath
        try copySample(sample, to: input)
        try folder.file("media/bad/empty." + (sample as NSString).pathExtension, "")
        let file = TestPaths.root + "/pipelines/\(pipeline).yml"
        var environment = ProcessInfo.processInfo.environment
        for name in variables + ["PETS_MANIFEST"] { environment[name] = nil }

        let run = try runCommand(
            ingest, ["run", file, folder.path + "/media"], environment: environment, directory: folder.path)
        #expect(run.status == 2, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.isEmpty, "\(run.stdout)")
        for name in variables {
            #expect(run.stderr.contains("environment variable '\(name)' is not set"), "\(name): \(run.stderr)")
        }
        #expect(run.stderr.contains("not run: the pipeline file has"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/.ingest"), "run did work before stopping")

        let validate = try runCommand(
            ingest, ["validate", file, folder.path + "/media"], environment: environment, directory: folder.path)
        #expect(validate.status == 1, "\(validate.stdout)\(validate.stderr)")
        // Nothing on standard error but the run's summary line.
        let errorLines = validate.stderr.split(separator: "\n")
        #expect(errorLines.count == 1 && errorLines[0].hasPrefix("2 files, "), "\(validate.stderr)")
        #expect(validate.stdout.contains("ok    \(folder.path)/media/\(relativePath)"), "\(validate.stdout)")
        #expect(validate.stdout.contains("validate.min_bytes: file is empty"), "\(validate.stdout)")
        #expect(validate.stdout.hasSuffix("1 passed, 1 failed, 0 skipped\n"), "\(validate.stdout)")
    }

    @Test func schemaCommandPrintsTheCommittedSchema() throws {
        let result = try runCommand(ingest, ["schema"])
        #expect(result.status == 0)
        let committed = try String(contentsOfFile: TestPaths.root + "/pipelines/schema.json", encoding: .utf8)
        #expect(result.stdout == committed)
    }
}
