import Foundation
import Testing

@testable import Ingest
@testable import IngestJournal

/// One run per journal *file* (issue 19, §5): the lock is the file's own (device and inode), so a second run that
/// names the journal through a symlink or a hard link is refused like one naming it the same way. The lock was
/// `<path>.lock` alone, taken per spelling of the path: both runs went, and every file was uploaded twice.
@Suite struct JournalLockTests {
    enum Name: String, CaseIterable, CustomTestStringConvertible {
        case symlink, hardLink
        var testDescription: String { rawValue }

        /// Makes `other` another name of the file at `path`.
        func make(_ other: String, for path: String) throws {
            switch self {
            case .symlink: try FileManager.default.createSymbolicLink(atPath: other, withDestinationPath: path)
            case .hardLink: try FileManager.default.linkItem(atPath: path, toPath: other)
            }
        }
    }

    @Test(arguments: Name.allCases) func anotherNameOfTheJournalIsRefused(_ name: Name) throws {
        let folder = try TemporaryFolder("lock-name")
        defer { folder.remove() }
        let path = folder.path + "/one/journal.sqlite"
        let first = try SQLiteJournal(path: path)
        try FileManager.default.createDirectory(atPath: folder.path + "/two", withIntermediateDirectories: true)
        let other = folder.path + "/two/other.sqlite"
        try name.make(other, for: path)
        do {
            _ = try SQLiteJournal(path: other)
            Issue.record("a second writer opened the journal through its \(name)")
        } catch let error as JournalError {
            #expect(error.message == "another ingest run is using the journal \(other); wait for it to finish")
        }
        try first.close()
        // Closed, the journal is free again (its connections may linger: the lock does not).
        #expect(throws: Never.self) { try SQLiteJournal(path: other).close() }
        _ = first
    }

    /// The same between two processes, as a user meets it: `ingest run` with `--journal` naming a journal another
    /// run holds, through a hard link or a symlink, and a work folder of its own.
    @Test(arguments: Name.allCases) func aSecondRunThroughAnotherNameStopsBeforeAnyFile(_ name: Name) throws {
        let folder = try TemporaryFolder("lock-cli")
        defer { folder.remove() }
        try folder.file("media/a.txt", "a")
        let pipeline = try folder.file(
            "p.yml", "version: 1\nname: lock\nstages:\n  - validate: { extensions: [txt], sniff: false }\n")
        let path = folder.path + "/first/journal.sqlite"
        let held = try SQLiteJournal(path: path)
        try FileManager.default.createDirectory(atPath: folder.path + "/second", withIntermediateDirectories: true)
        let other = folder.path + "/second/journal.sqlite"
        try name.make(other, for: path)
        let run = try runCommand(
            TestPaths.ingest,
            ["run", pipeline, "media", "-q", "--journal", other, "--work-dir", folder.path + "/second/work"],
            directory: folder.path)
        #expect(run.status != 0)
        #expect(run.stderr.contains("another ingest run is using the journal \(other); wait for it to finish"))
        #expect(!run.stdout.contains("a.txt"))
        #expect(try held.counts().isEmpty)
        try held.close()
    }
}
