import Foundation
import NativeSystem
import Testing

@testable import Ingest

/// Issue 22 §4: the journal identifies a file's content by XXH3-128 (`xxh3-128:<hex>`, checked against Debian's
/// `xxhsum`), taken while the file is copied or sent; a journal written by the previous release — bare SHA-256 hex
/// in the same column — still lets a rerun skip its files, touched or not, and still redoes a changed one.
@Suite struct JournalIdentityTests {
    static func yaml(_ folder: TemporaryFolder) -> String {
        """
        version: 1
        name: identity
        concurrency: 1
        stages:
          - upload: { method: local, dir: "\(folder.path)/out", key: "{{file.name}}", overwrite: true }

        """
    }

    func run(_ folder: TemporaryFolder) throws -> [String: String] {
        let pipeline = try Pipeline.parse(yaml: Self.yaml(folder), source: "identity.yml", environment: [:])
        let journal = try SQLiteJournal(path: folder.path + "/.ingest/journal.sqlite")
        let runner = Runner(
            pipeline: pipeline, settings: RunSettings(workDirectory: folder.path + "/.ingest/work", environment: [:]),
            journal: journal)
        var statuses: [String: String] = [:]
        try runner.run(paths: [folder.path + "/media"]) {
            statuses[$0.relativePath] =
                $0.skipReason?.hasPrefix(JournalReason.alreadyDone) == true ? "resumed" : $0.status.rawValue
        }
        try journal.close()
        return statuses
    }

    func sqlite(_ folder: TemporaryFolder, _ sql: String) throws -> String {
        let result = try runCommand("/usr/bin/env", ["sqlite3", folder.path + "/.ingest/journal.sqlite", sql])
        #expect(result.status == 0, "sqlite3: \(result.stderr)")
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func touch(_ path: String) throws {
        try FileManager.default.setAttributes(
            [.modificationDate: Date(timeIntervalSinceNow: -7200)], ofItemAtPath: path)
    }

    @Test func theJournalRecordsXXH3TakenWhileCopying() throws {
        let folder = try TemporaryFolder("identity-xxh3")
        defer { folder.remove() }
        let file = try writeRandomFile(folder.path + "/media/a.bin", size: 700_001, seed: 22)
        FileReadCounter.track(file)
        #expect(try run(folder) == ["a.bin": "passed"])
        let xxhsum = try runCommand("/usr/bin/env", ["xxhsum", "-H2", file])
        let expected = "xxh3-128:" + (xxhsum.stdout.split(separator: " ").first.map(String.init) ?? "?")
        #expect(try sqlite(folder, "SELECT sha256 FROM files WHERE relative_path = 'a.bin'") == expected)
        // Taken in the copy's read: the file was not read again to hash it.
        #expect(FileReadCounter.bytes(file, .hash) == 0)
        // Touched, same bytes: recognised by the identity.
        try touch(file)
        #expect(try run(folder) == ["a.bin": "resumed"])
    }

    /// The previous release wrote SHA-256 hex in `files.sha256`: the journal is made by this release, then given
    /// the old release's identities, as a journal of the previous release would hold them.
    @Test func aJournalOfThePreviousReleaseStillSkipsItsFiles() throws {
        let folder = try TemporaryFolder("identity-legacy")
        defer { folder.remove() }
        let same = try writeRandomFile(folder.path + "/media/same.bin", size: 300_000, seed: 1)
        let touched = try writeRandomFile(folder.path + "/media/touched.bin", size: 300_000, seed: 2)
        let changed = try writeRandomFile(folder.path + "/media/changed.bin", size: 300_000, seed: 3)
        #expect(try run(folder).values.allSatisfy { $0 == "passed" })
        for path in [same, touched, changed] {
            let name = (path as NSString).lastPathComponent
            _ = try sqlite(folder, "UPDATE files SET sha256 = '\(try sha256sum(path))' WHERE relative_path = '\(name)'")
        }
        #expect(try sqlite(folder, "SELECT count(*) FROM files WHERE sha256 LIKE 'xxh3%'") == "0")
        try touch(touched)
        _ = try writeRandomFile(changed, size: 300_000, seed: 4)  // same size, other bytes
        try touch(changed)
        #expect(try run(folder) == ["same.bin": "resumed", "touched.bin": "resumed", "changed.bin": "passed"])
        // The redone file's record identifies its new content by the SHA-256 the comparison already took (no second
        // read); every record keeps working.
        #expect(
            try sqlite(folder, "SELECT sha256 FROM files WHERE relative_path = 'changed.bin'")
                == (try sha256sum(changed)))
        #expect(try run(folder).values.allSatisfy { $0 == "resumed" })
    }
}
