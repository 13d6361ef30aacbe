import Foundation
import Testing

@testable import IngestTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// The documents' commands of `DocsCommandTests.tested`, run as written in folders laid out as the documents say
/// (copies of `Samples/`), against the fixtures; where a document shows output, the run must print it.
@Suite struct DocsCommandRuns {
    /// The YAML block of `file` whose text contains `marker` (a pipeline the document shows), as written.
    static func yamlBlock(in file: String, containing marker: String) throws -> String {
        let text = try String(contentsOfFile: TestPaths.root + "/" + file, encoding: .utf8)
        let blocks = text.components(separatedBy: "```yaml\n").dropFirst()
            .compactMap { $0.components(separatedBy: "```").first }
        return try #require(blocks.first { $0.contains(marker) }, "\(file) has no yaml block with \(marker)")
    }

    static func copy(_ samples: [String: String], into shell: DocShell) throws {
        for (target, sample) in samples { try copySample(sample, to: shell.folder.path + "/" + target) }
    }

    @Test func readmeFirstRun() throws {
        let shell = try DocShell("first-run")
        _ = try shell.folder.file("check.yml", try Self.yamlBlock(in: "README.md", containing: "# check.yml"))
        try Self.copy(
            [
                "movies/located-udta.mov": "good/located-udta.mov", "movies/located.mov": "good/located.mov",
                "movies/plain.mov": "good/plain.mov", "movies/portrait.mov": "good/portrait.mov",
                "movies/truncated.mov": "bad/truncated.mov",
            ], into: shell)
        let version = try shell.run("ingest --version", in: "README.md", status: 0)
        #expect(version.stdout.contains("FFmpeg") && version.stdout.contains("libcurl"), "\(version.stdout)")
        let lint = try shell.run("ingest lint check.yml", in: "README.md", status: 0)
        #expect(!lint.stdout.contains("warning"), "\(lint.stdout)")
        try shell.run("ingest validate check.yml movies/", in: "README.md", status: 1)
    }

    /// The S3 example works as written once the variables it names are set; before, lint names every one.
    @Test func readmeS3Example() throws {
        let shell = try DocShell("s3-example")
        _ = try shell.folder.file(
            "to-my-bucket.yml", try Self.yamlBlock(in: "README.md", containing: "# to-my-bucket.yml"))
        try Self.copy(
            [
                "photos/photo.jpg": "good/photo.jpg", "photos/photo.heic": "good/photo.heic",
                "photos/located.mov": "good/located.mov", "photos/plain.mov": "good/plain.mov",
            ], into: shell)
        let lint = try shell.run("ingest lint to-my-bucket.yml", in: "README.md", status: 0)
        for variable in ["S3_BUCKET", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"] {
            #expect(lint.stdout.contains("warning: environment variable"), "\(lint.stdout)")
            #expect(lint.stdout.contains("'\(variable)'"), "lint does not name \(variable): \(lint.stdout)")
        }
        try shell.run(
            "export AWS_ACCESS_KEY_ID=AKIA… AWS_SECRET_ACCESS_KEY=… AWS_REGION=eu-north-1", in: "README.md", status: 0)
        let dryRun = try shell.run(
            "S3_BUCKET=my-bucket ingest run --dry-run to-my-bucket.yml photos/", in: "README.md", status: 0)
        #expect(
            dryRun.stdout.contains("upload: PUT https://my-bucket.s3.eu-north-1.amazonaws.com/geo/u6sce0/"),
            "\(dryRun.stdout)\(dryRun.stderr)")
        #expect(dryRun.stdout.contains("skip  photos/plain.mov"), "\(dryRun.stdout)")
        #expect(!FileManager.default.fileExists(atPath: shell.folder.path + "/.ingest/journal.sqlite"))
    }

    @Test func dryRuns() throws {
        let shell = try DocShell("dry-runs")
        try Self.copy(["recordings/6f1c2d3e-4b5a-4c6d-8e7f-0123456789ab/voice.m4a": "good/voice.m4a"], into: shell)
        for command in DocsCommandTests.tested["docs/testing-pipelines.md"]!.filter({ $0.contains("--dry-run") }) {
            try shell.run(command, in: "docs/testing-pipelines.md", status: 0)
        }
    }

    /// `ingest test` over the shipped pipelines' tests (the count the document prints is this run's), and over a
    /// test file of the document's with a wrong URL.
    @Test func pipelineTests() throws {
        let shell = try DocShell("pipeline-tests")
        let file = "docs/testing-pipelines.md"
        _ = try shell.folder.file(
            "t/vet-audio.test.yml", try Self.yamlBlock(in: file, containing: "pipeline: vet-audio.yml"))
        try FileManager.default.copyItem(
            atPath: TestPaths.root + "/pipelines/vet-audio.yml", toPath: shell.folder.path + "/t/vet-audio.yml")
        try shell.run("ingest test t/", in: file, status: 1)
        try shell.run("ingest test", in: file, status: 0)
    }

    /// command-line.md's completion commands write into system folders (not run); the scripts they save are printed.
    @Test func completionScriptsArePrinted() throws {
        for shellName in ["bash", "zsh", "fish"] {
            let result = try runCommand(TestPaths.ingest, ["--generate-completion-script", shellName])
            #expect(result.status == 0 && result.stdout.contains("validate"), "\(shellName): \(result.stderr)")
        }
    }
}

extension DocShell {
    /// Starts a document's background command (`… &`) in a shell that waits for it, and waits until it wrote
    /// `portFile`; `stop()` ends the shell, and a fixture that watches its parent goes with it.
    func start(_ text: String, in file: String, waitingFor portFile: String) throws -> BackgroundCommand {
        var script = try Self.command(text, in: file).text
        for (from, to) in replacing { script = script.replacingOccurrences(of: from, with: to) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script + "\nwait"]
        process.environment = environment
        process.currentDirectoryURL = URL(fileURLWithPath: folder.path)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        for _ in 0..<500 where process.isRunning {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8),
                Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) != nil
            {
                return BackgroundCommand(process: process)
            }
            usleep(20_000)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        throw FixtureError(message: "\(file): `\(text)` wrote no port to \(portFile)")
    }
}

/// A document's command left running in the background (a fixture server), ended by `stop()`.
struct BackgroundCommand {
    let process: Process

    /// SIGKILL, as the shell may have been started with SIGTERM blocked (a thread of libdispatch spawned it) and
    /// would never see it; the fixture, which watches its parent, leaves once the shell is gone.
    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}
