import Foundation
import Testing

@testable import IngestCore
@testable import IngestTestSupport

/// Issue 29 §1: a file is moved or deleted only once its whole pipeline ran and an upload delivered it — never under
/// `ingest validate`, `--dry-run` or `ingest test`, and never when every upload left it out (`when:`).
@Suite(.serialized) struct DeliveredOnlyTests {
    /// `photo.jpg` goes past the upload (`when:` takes only `.mov`); `plain.mov` is uploaded; `bad.txt` fails validate.
    static func pipeline(_ disposal: String) -> String {
        """
        version: 1
        name: delivered
        \(disposal)
        stages:
          - validate: { extensions: [jpg, mov] }
          - upload: { method: local, dir: dest, when: { extensions: [mov] } }

        """
    }

    static func inputs(_ folder: TemporaryFolder) throws {
        for name in ["photo.jpg", "plain.mov"] {
            try FileManager.default.createDirectory(atPath: folder.path + "/in", withIntermediateDirectories: true)
            try FileManager.default.copyItem(
                atPath: TestPaths.root + "/Samples/good/" + name, toPath: folder.path + "/in/" + name)
        }
        try folder.file("in/bad.txt", "not a picture")
    }

    static func ingest(_ folder: TemporaryFolder, _ arguments: [String]) throws -> CommandResult {
        try runCommand(TestPaths.ingest, arguments, environment: environmentWithoutProxies(), directory: folder.path)
    }

    static func exists(_ folder: TemporaryFolder, _ path: String) -> Bool {
        FileManager.default.fileExists(atPath: folder.path + "/" + path)
    }

    static let disposals = [
        "on_success: { delete: true }\non_failure: { move_to: failed }",
        "on_success: { move_to: done }\non_failure: { move_to: failed }",
    ]

    @Test(arguments: disposals) func validateMovesAndDeletesNothing(disposal: String) throws {
        let folder = try TemporaryFolder("delivered-validate")
        defer { folder.remove() }
        try Self.inputs(folder)
        let pipeline = try folder.file("p.yml", Self.pipeline(disposal))
        let result = try Self.ingest(folder, ["validate", pipeline, "in", "-q"])
        #expect(result.status == 1, "bad.txt fails validate: \(result.stdout)\(result.stderr)")
        for name in ["photo.jpg", "plain.mov", "bad.txt"] {
            #expect(Self.exists(folder, "in/" + name), "validate disposed of \(name)")
        }
        #expect(!Self.exists(folder, "done") && !Self.exists(folder, "failed") && !Self.exists(folder, "dest"))
    }

    @Test(arguments: disposals) func aDryRunMovesNothingAndKeepsWhatNoUploadTakes(disposal: String) throws {
        let folder = try TemporaryFolder("delivered-dry")
        defer { folder.remove() }
        try Self.inputs(folder)
        let pipeline = try folder.file("p.yml", Self.pipeline(disposal))
        let result = try Self.ingest(folder, ["run", pipeline, "in", "--dry-run"])
        for name in ["photo.jpg", "plain.mov", "bad.txt"] {
            #expect(Self.exists(folder, "in/" + name), "the dry run disposed of \(name)")
        }
        #expect(!Self.exists(folder, "done") && !Self.exists(folder, "failed") && !Self.exists(folder, "dest"))
        let lines = result.stdout.split(separator: "\n").map(String.init)
        let photo = try #require(lines.firstIndex { $0.contains("in/photo.jpg") }, "\(result.stdout)")
        let movie = try #require(lines.firstIndex { $0.contains("in/plain.mov") }, "\(result.stdout)")
        let said = disposal.contains("delete") ? "on_success: would delete" : "on_success: would move to done/plain.mov"
        #expect(lines[(movie + 1)...].prefix(8).contains { $0.contains(said) }, "\(result.stdout)")
        #expect(
            lines[photo + 1].contains("on_success: would keep (no upload would deliver it)"), "\(result.stdout)")
        #expect(result.stdout.contains("on_failure: would move to failed/bad.txt"), "\(result.stdout)")
    }

    /// The case: a photo through a pipeline whose only upload takes `.mov` passes, is never sent, and stays —
    /// in this run and the next (the journal has it as done, but nothing delivered it).
    @Test(arguments: disposals) func aFileNoUploadTookStaysAndADeliveredOneGoes(disposal: String) throws {
        let folder = try TemporaryFolder("delivered-when")
        defer { folder.remove() }
        try Self.inputs(folder)
        let pipeline = try folder.file("p.yml", Self.pipeline(disposal))
        for round in 1...2 {
            let report = folder.path + "/report-\(round).jsonl"
            let result = try Self.ingest(folder, ["run", pipeline, "in", "--report", report, "-q"])
            #expect(result.status == (round == 1 ? 1 : 0), "round \(round): \(result.stdout)\(result.stderr)")
            #expect(Self.exists(folder, "in/photo.jpg"), "round \(round): the photo nothing sent was disposed of")
            #expect(!Self.exists(folder, "dest/photo.jpg"))
            let photo = reportObjects(report).first { ($0["path"] as? String) == "in/photo.jpg" }
            let fact = (photo?["facts"] as? [String: Any])?["disposal"] as? [String: Any]
            #expect(fact?["action"] as? String == "kept", "round \(round): \(photo ?? [:])")
            #expect(fact?["reason"] as? String == "no upload delivered it")
        }
        #expect(Self.exists(folder, "dest/plain.mov"), "the movie was uploaded")
        #expect(!Self.exists(folder, "in/plain.mov"), "the delivered movie went")
        #expect(Self.exists(folder, disposal.contains("delete") ? "dest/plain.mov" : "done/plain.mov"))
        #expect(Self.exists(folder, "failed/bad.txt"), "on_failure still takes failed files under run")
    }

    /// Sending a poster made from the movie does not deliver the movie: `on_success: { delete: true }` keeps the
    /// original until an upload sends the file itself (an upload with `output:` sends something else).
    @Test func anUploadOfAnOutputDoesNotDeliverTheFile() throws {
        let folder = try TemporaryFolder("delivered-output")
        defer { folder.remove() }
        try Self.inputs(folder)
        try FileManager.default.removeItem(atPath: folder.path + "/in/photo.jpg")
        try FileManager.default.removeItem(atPath: folder.path + "/in/bad.txt")
        let posterOnly = """
            version: 1
            name: poster-only
            on_success: { delete: true }
            stages:
              - poster: { output: poster }
              - upload: { method: local, dir: dest, output: poster }

            """
        let pipeline = try folder.file("p.yml", posterOnly)
        let result = try Self.ingest(folder, ["run", pipeline, "in", "-q", "--no-journal"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(Self.exists(folder, "dest/plain.poster.jpg"), "the poster was sent")
        #expect(Self.exists(folder, "in/plain.mov"), "only a poster was sent, yet the movie was deleted")
        let both = try folder.file(
            "both.yml", posterOnly + "  - upload: { method: local, dir: sent }\n")
        let second = try Self.ingest(folder, ["run", both, "in", "-q", "--no-journal"])
        #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
        #expect(Self.exists(folder, "sent/plain.mov"), "the movie itself was sent")
        #expect(!Self.exists(folder, "in/plain.mov"), "the delivered movie stayed")
    }

    /// `ingest test` rehearses: a case over a pipeline that disposes moves, deletes and creates nothing, and its
    /// report says what a run would do.
    @Test func ingestTestDisposesOfNothing() throws {
        let folder = try TemporaryFolder("delivered-test")
        defer { folder.remove() }
        try Self.inputs(folder)
        try folder.file("p.yml", Self.pipeline(Self.disposals[1]))
        try folder.file(
            "p.test.yml",
            """
            pipeline: p.yml
            cases:
              - name: movie
                input: in/plain.mov
                expect: { status: passed, facts: { disposal.action: would move } }
              - name: photo
                input: in/photo.jpg
                expect: { status: passed, facts: { disposal.action: would keep } }
              - name: bad
                input: in/bad.txt
                expect: { status: failed, facts: { disposal.action: would move } }
            """)
        let result = try Self.ingest(folder, ["test", "p.test.yml"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        for name in ["photo.jpg", "plain.mov", "bad.txt"] { #expect(Self.exists(folder, "in/" + name)) }
        #expect(!Self.exists(folder, "done") && !Self.exists(folder, "failed") && !Self.exists(folder, "dest"))
    }

    @Test func lintSaysWhenAPipelineDisposesOfFiles() throws {
        let folder = try TemporaryFolder("delivered-lint")
        defer { folder.remove() }
        let pipeline = try folder.file("p.yml", Self.pipeline(Self.disposals[0]))
        let result = try Self.ingest(folder, ["lint", pipeline])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(
            result.stdout.contains(
                "p.yml:3:1: note: on_success deletes each input file once an upload delivered it, under `ingest run` "
                    + "and `ingest watch` (never under `ingest validate`, `--dry-run` or `ingest test`); a file no "
                    + "upload's `when:` takes is kept"), "\(result.stdout)")
        #expect(result.stdout.contains("p.yml:4:1: note: on_failure moves each failed file"), "\(result.stdout)")
        // Without an upload, on_success can never apply: a warning.
        let local = try folder.file(
            "local.yml",
            "version: 1\nname: local\non_success: { delete: true }\nstages:\n  - validate: { extensions: [jpg] }\n")
        let warned = try Self.ingest(folder, ["lint", local])
        #expect(
            warned.stdout.contains(
                "local.yml:3:1: warning: on_success never applies: a file is moved or deleted only "
                    + "once an upload delivered it, and this pipeline has no upload stage"), "\(warned.stdout)")
        // An upload lint cannot build for an unset variable is still an upload.
        let unset = try folder.file(
            "unset.yml",
            "version: 1\nname: unset\non_success: { delete: true }\nstages:\n"
                + "  - upload: { method: local, dir: \"${DELIVERED_ONLY_UNSET}\" }\n")
        let quiet = try Self.ingest(folder, ["lint", unset])
        #expect(quiet.stdout.contains("DELIVERED_ONLY_UNSET"), "\(quiet.stdout)")
        #expect(!quiet.stdout.contains("never applies"), "\(quiet.stdout)")
    }
}
