import Foundation
import Testing

@testable import IngestTestSupport

/// Every shell command a reader would copy from README.md, ARCHITECTURE.md and docs/**/*.md is either run here (in
/// `tested`, by the test named beside it, against the fixtures and the debug `ingest`, its output compared where the
/// document shows one) or sits in a code block marked `<!-- not-run: why -->` on the line above it. A command added
/// to a document with neither fails `everyCommandIsRunOrMarked`, which says what to do.
@Suite struct DocsCommandTests {
    /// The commands the tests below run, by document, exactly as the document writes them (`$ ` dropped,
    /// continuation lines joined by a space, a trailing `# comment` cut).
    static let tested: [String: [String]] = [
        "README.md": [
            "ingest --version",  // readmeFirstRun
            "ingest lint check.yml",  // readmeFirstRun
            "ingest validate check.yml movies/",  // readmeFirstRun
            "ingest lint to-my-bucket.yml",  // readmeS3Example
            "export AWS_ACCESS_KEY_ID=AKIA… AWS_SECRET_ACCESS_KEY=… AWS_REGION=eu-north-1",  // readmeS3Example
            "S3_BUCKET=my-bucket ingest run --dry-run to-my-bucket.yml photos/",  // readmeS3Example
            "ingest validate pipelines/preflight.yml Samples/",  // ReadmeTests.demoOutput
        ],
        "docs/testing-pipelines.md": [
            "HELPPET_API=https://api.example.com HELPPET_TOKEN=eyJhbGciOiJIUzI1NiJ9.e30.sig "
                + "ingest run --dry-run pipelines/vet-audio.yml recordings/",  // dryRuns
            "S3_ENDPOINT=https://s3.eu-north-1.amazonaws.com S3_BUCKET=crowd-media "
                + "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE AWS_SECRET_ACCESS_KEY=… AWS_REGION=eu-north-1 "
                + "ingest run --dry-run pipelines/crowd-geotag.yml Samples/good/located.mov",  // dryRuns
            "ingest test t/",  // pipelineTests
            "ingest test",  // pipelineTests
        ],
        "docs/walkthroughs/README.md": [
            "python3 Tests/Fixtures/backend.py --port-file /tmp/port &"  // walkthroughsOnSamples
        ],
        // The walkthroughs: SeedPipelinesWalkthroughs.
        "docs/walkthroughs/hockey-video-analyze.md": [
            "PUCKBUDDY_API=http://127.0.0.1:$(cat /tmp/port) PUCKBUDDY_USER_ID=uid-42 "
                + "ingest run pipelines/hockey-video-analyze.yml videos/ --report analysis.jsonl"
        ],
        "docs/walkthroughs/hockey-video-signed-put.md": [
            "PUCKBUDDY_BACKEND=http://127.0.0.1:$(cat /tmp/port)/api PUCKBUDDY_USER_ID=uid-42 "
                + "FIRESTORE_URL=http://127.0.0.1:$(cat /tmp/port) FIREBASE_PROJECT=puck-buddy FIREBASE_TOKEN=any "
                + "PUCKBUDDY_POLL_INTERVAL=0.2s ingest run pipelines/hockey-video-signed-put.yml videos/",
            "cat videos/plain.coach.txt",
        ],
        "docs/walkthroughs/vet-audio.md": [
            "export HELPPET_API=http://127.0.0.1:$(cat /tmp/port) HELPPET_TOKEN=…",  // SeedPipelinesWalkthroughs
            "ingest run pipelines/vet-audio.yml recordings/", "ingest run pipelines/vet-audio.yml later/",
        ],
        "docs/walkthroughs/crowd-geotag.md": [
            "S3_ENDPOINT=http://127.0.0.1:18333 S3_BUCKET=crowd-media AWS_ACCESS_KEY_ID=AKIDDEMO "
                + "AWS_SECRET_ACCESS_KEY=… ingest run pipelines/crowd-geotag.yml media/"  // SeedPipelinesWalkthroughs
        ],
        "docs/walkthroughs/vehicle-photos.md": [
            "DISCERNER_API=http://127.0.0.1:$(cat /tmp/port) ingest run pipelines/vehicle-photos.yml photos/ "
                + "--report vehicles.jsonl"  // walkthroughsOnSamples
        ],
    ]

    static func instructions(for command: DocCommand) -> String {
        """
        \(command.file):\(command.line): `\(command.text)` is a command a reader would copy, and no test runs it.
          Either run it: add its text, exactly as above, to DocsCommandTests.tested under "\(command.file)" and run \
        it in a test there (DocShell.run compares its output with the document's), against the fixtures;
          or, if it cannot run here (a real cloud account, root, a long service), put on the line above its code block
          <!-- not-run: the reason, and which test covers it instead if one does -->
        """
    }

    @Test func everyCommandIsRunOrMarked() throws {
        let commands = try DocCommands.all()
        #expect(commands.count > 20, "the extractor found too few commands: \(commands.map(\.text))")
        for command in commands where command.notRun == nil {
            let listed = Self.tested[command.file]?.contains(command.text) ?? false
            #expect(listed, "\(Self.instructions(for: command))")
        }
        // And nothing in the table that the documents no longer show.
        for (file, texts) in Self.tested {
            for text in texts {
                #expect(
                    commands.contains { $0.file == file && $0.text == text },
                    "DocsCommandTests.tested names `\(text)` in \(file), which no longer shows it: update the entry")
            }
        }
    }

    /// The extractor finds `$ ` commands with their output, `sh` lines, continuations and markers, and ignores other
    /// languages; a command without a marker or an entry is what the check above reports.
    @Test func theExtractorFindsCommandsOutputsAndMarkers() {
        let text = """
            ```sh
            ingest lint a.yml      # checks it
            # a comment
            A=1 \\
              ingest run a.yml
            ```
            <!-- not-run: needs a real AWS account -->

            ```
            $ ingest validate a.yml in/
            ok    in/x.mov
            $ cat x
            ```
            ```yaml
            $ not a command
            ```
            """
        let found = DocCommands.commands(in: "x.md", text: text)
        #expect(
            found.map(\.text) == ["ingest lint a.yml", "A=1 ingest run a.yml", "ingest validate a.yml in/", "cat x"])
        #expect(found.map(\.line) == [2, 4, 10, 12])
        #expect(found[0].notRun == nil && found[0].output == nil)
        #expect(found[2].notRun == "needs a real AWS account")
        #expect(found[2].output == ["ok    in/x.mov"] && found[3].output == [])
    }

    @Test func theOutputComparisonNormalisesOnlyWhatVaries() {
        let shown = [
            "ok    a.mov", "…", "2 passed", "5 files, 154.4 KiB in 0.0s, 8.1 MiB/s; 1 failed  (standard error)",
        ]
        let stderr = "5 files, 154.4 KiB in 1.2s, 99.0 MiB/s; 1 failed\n"
        #expect(DocOutput.difference(shown: shown, stdout: "ok    a.mov\nx\ny\n2 passed\n", stderr: stderr) == nil)
        #expect(DocOutput.difference(shown: shown, stdout: "ok    a.mov\n3 passed\n", stderr: stderr) != nil)
        #expect(DocOutput.difference(shown: shown, stdout: "ok    a.mov\n2 passed\n", stderr: "6 files") != nil)
        #expect(DocOutput.normalised("http://127.0.0.1:4711/x") == "http://127.0.0.1:PORT/x")
    }
}
