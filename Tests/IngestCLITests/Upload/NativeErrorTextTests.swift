import Foundation
import Testing

@testable import IngestConfig
@testable import IngestTestSupport

/// Files a user named (an upload's or a save's destination folder, a lookup's manifest) are made and read through
/// IngestNative: a failure is told in the C library's words (`mkdir(…/blocked): file exists`, as `mkdir -p` says
/// it; `no such file or directory`), not Foundation's paraphrase ("NSCocoaErrorDomain error 512").
@Suite struct NativeErrorTextTests {
    /// `dest/blocked` is a file, so no folder can be made under it.
    func blockedRun(_ stage: String) throws -> (CommandResult, [String]) {
        let folder = try TemporaryFolder("local-folder")
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/clip.mov", size: 1_000)
        _ = try folder.folder("dest")
        try folder.file("dest/blocked", "a file where a folder would go")
        let pipeline = try folder.file(
            "p.yml",
            """
            version: 1
            name: blocked
            stages:
              - \(stage)

            """)
        let (result, reports) = try runIngestWithReport(
            pipeline, [folder.path + "/in"], in: folder.path, environment: [:])
        let messages = reports.flatMap { report in
            ((report["failures"] as? [[String: Any]]) ?? []).compactMap { $0["message"] as? String }
        }
        return (result, messages)
    }

    @Test func aDestinationUnderAFileNamesTheCError() throws {
        let (result, messages) = try blockedRun(
            #"upload: { method: local, dir: dest/blocked/out, key: "{{file.name}}" }"#)
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        #expect(messages.count == 1, "\(messages)")
        #expect(messages.first?.contains("cannot create dest/blocked/out: mkdir(") == true, "\(messages)")
        #expect(
            messages.first?.contains("cannot create dest/blocked/out: mkdir(dest/blocked): file exists") == true,
            "\(messages)")
    }

    @Test func aKeyFolderUnderAFileNamesTheCError() throws {
        let (result, messages) = try blockedRun(#"upload: { method: local, dir: dest, key: "blocked/{{file.name}}" }"#)
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        #expect(messages.first?.contains("cannot create the folder for key 'blocked/clip.mov'") == true, "\(messages)")
        #expect(messages.first?.contains("/dest/blocked): file exists") == true, "\(messages)")
    }

    @Test func aSavedFileUnderAFileNamesTheCError() throws {
        let (result, messages) = try blockedRun(
            #"save: { to: dest/blocked/out, files: { "{{file.stem}}.json": { json: "{{file.name}}" } } }"#)
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        #expect(messages.first?.contains("dest/blocked): file exists") == true, "\(messages)")
    }

    @Test func aMissingManifestNamesTheCError() throws {
        let yaml = "version: 1\nname: m\nstages:\n  - lookup: { csv: /nonexistent/pets.csv }\n"
        let errors = Pipeline.lint(yaml: yaml, environment: [:]).map(\.message).joined(separator: "\n")
        #expect(
            errors.contains("cannot read the manifest /nonexistent/pets.csv: no such file or directory"), "\(errors)")
    }
}
