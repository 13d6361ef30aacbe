import Foundation
import NativeSQLite
import Testing

@testable import Ingest
@testable import IngestJournal

/// The journal on disk: one complete, private file after a clean run, and never a silent fresh start over a file
/// that is empty, damaged or not a journal (that would redo, and upload again, every file).
@Suite struct JournalFileTests {
    let ingest = TestPaths.ingest

    /// The permission bits of a file, or nil when it is missing.
    static func mode(_ path: String) -> UInt32? {
        (try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.uint32Value
    }

    /// Three small files and a validate-only pipeline; returns the pipeline's path.
    func batch(_ folder: TemporaryFolder) throws -> String {
        for name in ["a", "b", "c"] { try folder.file("media/\(name).txt", name) }
        return try folder.file(
            "p.yml", "version: 1\nname: journal-file\nstages:\n  - validate: { extensions: [txt], sniff: false }\n")
    }

    func run(_ pipeline: String, in folder: TemporaryFolder, _ extra: [String] = []) throws -> CommandResult {
        try runCommand(ingest, ["run", pipeline, "media"] + extra, directory: folder.path)
    }

    /// A CI cache of `.ingest/journal.sqlite` alone: everything used to live in the `-wal` file, so the copy
    /// started afresh and redid every file. Now a clean run folds the log into the file.
    @Test func aJournalCopiedWithoutItsLogResumes() throws {
        let folder = try TemporaryFolder("journal-copy")
        defer { folder.remove() }
        let pipeline = try batch(folder)
        let first = try run(pipeline, in: folder)
        #expect(first.status == 0, "\(first.stderr)")
        let wal = folder.path + "/.ingest/journal.sqlite-wal"
        let walSize = (try? FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int) ?? 0
        #expect(walSize == 0, "the write-ahead log still holds \(walSize) bytes after a clean run")
        try FileManager.default.createDirectory(atPath: folder.path + "/cache", withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: folder.path + "/.ingest/journal.sqlite", toPath: folder.path + "/cache/journal.sqlite")
        let second = try run(pipeline, in: folder, ["--journal", "cache/journal.sqlite"])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stdout.hasSuffix("0 passed, 0 failed, 3 skipped\n"), "\(second.stdout)")
    }

    /// A write-ahead log whose header is damaged: SQLite would pass over it in silence (and with it the latest
    /// records); the run stops with exit 3 naming the log.
    @Test func aDamagedWriteAheadLogStopsTheRun() throws {
        let folder = try TemporaryFolder("journal-wal")
        defer { folder.remove() }
        let pipeline = try batch(folder)
        #expect(try run(pipeline, in: folder).status == 0)
        let path = folder.path + "/.ingest/journal.sqlite"
        // A record written after the last checkpoint, as a killed run leaves it: in the log only.
        try {
            let database = try Database(path: path, create: false)
            try database.keepWriteAheadLogOnClose()
            try database.execute("PRAGMA journal_mode=WAL; INSERT INTO meta(key, value) VALUES ('late', 'x')")
        }()
        let wal = path + "-wal"
        let size = try #require(FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int)
        try #require(size > 32)
        let handle = try #require(FileHandle(forWritingAtPath: wal))
        try handle.write(contentsOf: Data(repeating: 0x5A, count: 32))
        try handle.close()
        let second = try run(pipeline, in: folder)
        #expect(second.status == 3, "\(second.stdout)")
        #expect(
            second.stderr.contains("write-ahead log \(".ingest/journal.sqlite-wal") is damaged"), "\(second.stderr)")
        #expect(!second.stdout.contains("passed"))
    }

    /// How a journal file can be unfit: each must stop the run with exit 3, name the file, keep SQLite's message
    /// where there is one, and leave the file as it was.
    enum Damage: String, CaseIterable, Sendable {
        case emptyFile, notADatabase, foreignDatabase, noTables, noFormat, futureFormat, cutShort
    }

    func damage(_ damage: Damage, at path: String) throws {
        switch damage {
        case .emptyFile: try Data().write(to: URL(fileURLWithPath: path))
        case .notADatabase:
            try Data(String(repeating: "not a database\n", count: 300).utf8).write(to: URL(fileURLWithPath: path))
        case .foreignDatabase:
            let database = try Database(path: path)
            try database.execute("CREATE TABLE photos(id INTEGER PRIMARY KEY, name TEXT)")
        case .noTables:
            // An older ingest's journal copied without its -wal: the header is there, the tables were in the log.
            let database = try Database(path: path)
            try database.execute("PRAGMA journal_mode=WAL")
        case .noFormat, .futureFormat:
            try SQLiteJournal(path: path).close()
            let database = try Database(path: path, create: false)
            try database.execute(
                damage == .noFormat
                    ? "DELETE FROM meta WHERE key = 'schema'" : "UPDATE meta SET value = '2' WHERE key = 'schema'")
        case .cutShort:
            // A journal of a few hundred files, cut at three quarters (a copy that stopped early).
            let journal = try SQLiteJournal(path: path)
            for index in 0..<2_000 {
                try journal.recordWithoutWork(
                    root: "/media", relativePath: "f\(index).txt", path: "media/f\(index).txt", pipeline: "p",
                    configHash: "c", state: .done)
            }
            try journal.close()
            let handle = try #require(FileHandle(forUpdatingAtPath: path))
            let size = try handle.seekToEnd()
            try handle.truncate(atOffset: size / 4 * 3 / 4096 * 4096)
            try handle.close()
        }
    }

    @Test(arguments: Damage.allCases)
    func anUnfitJournalStopsTheRun(_ kind: Damage) throws {
        let folder = try TemporaryFolder("journal-\(kind.rawValue)")
        defer { folder.remove() }
        let pipeline = try batch(folder)
        try FileManager.default.createDirectory(atPath: folder.path + "/j", withIntermediateDirectories: true)
        let path = folder.path + "/j/journal.sqlite"
        try damage(kind, at: path)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let result = try run(pipeline, in: folder, ["--journal", "j/journal.sqlite"])
        #expect(result.status == 3, "\(kind): \(result.stdout)")
        #expect(result.stderr.contains("j/journal.sqlite"), "\(kind): \(result.stderr)")
        print("\(kind): \(result.stderr)")
        #expect(!result.stdout.contains("passed"), "\(kind): \(result.stdout)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before, "\(kind): the file was changed")
        let status = try runCommand(ingest, ["status", "--journal", "j/journal.sqlite"], directory: folder.path)
        #expect(status.status == 3, "\(kind): status \(status.stdout)")
        switch kind {
        case .notADatabase: #expect(result.stderr.contains("file is not a database"), "\(result.stderr)")
        case .emptyFile: #expect(result.stderr.contains("is empty (0 bytes)"), "\(result.stderr)")
        case .futureFormat: #expect(result.stderr.contains("has format 2"), "\(result.stderr)")
        case .foreignDatabase, .noTables:
            #expect(result.stderr.contains("is not an ingest journal"), "\(result.stderr)")
        default: break
        }
    }

    /// The journal holds live signed URLs: it and its `-wal` and `-shm` files are 0600 while a run writes them
    /// and after, whatever the umask; a journal an older ingest left readable is made private when a run opens it.
    @Test func journalFilesAreOwnerOnly() throws {
        let folder = try TemporaryFolder("journal-mode")
        defer { folder.remove() }
        let path = folder.path + "/.ingest/journal.sqlite"
        let journal = try SQLiteJournal(path: path)
        try journal.setMeta("pipeline", "p")
        try journal.commit()
        for file in [path, path + "-wal", path + "-shm"] {
            #expect(Self.mode(file) == 0o600, "\(file): \(String(Self.mode(file) ?? 0, radix: 8))")
        }
        try journal.close()
        for file in [path, path + "-wal", path + "-shm"] where FileManager.default.fileExists(atPath: file) {
            chmod(file, 0o644)
        }
        let reopened = try SQLiteJournal(path: path)
        try reopened.setMeta("pipeline", "q")
        try reopened.commit()
        for file in [path, path + "-wal", path + "-shm"] {
            #expect(Self.mode(file) == 0o600, "\(file): \(String(Self.mode(file) ?? 0, radix: 8))")
        }
        try reopened.close()

        // The same through the command line, after the run.
        let pipeline = try batch(folder)
        #expect(
            try runCommand(ingest, ["run", pipeline, "media", "--journal", "cli.sqlite"], directory: folder.path).status
                == 0)
        #expect(Self.mode(folder.path + "/cli.sqlite") == 0o600)
    }
}
