import Foundation
import NativeSQLite
import Testing

@testable import Ingest
@testable import IngestJournal

/// The SQLite journal at scale (issue 19): its write-ahead log is folded back as a run goes, whatever lookups the
/// workers make, so it stays bounded and a run's cost per file stays flat. Sizes only: speed is in
/// `Benchmarks/journal.sh`, which also samples the log through whole runs.
@Suite struct JournalScaleTests {
    static func start(_ index: Int) -> JournalStart {
        JournalStart(
            root: "/media", relativePath: "f\(index).txt", path: "media/f\(index).txt", size: 10, modified: 1,
            inode: UInt64(index), sha256: nil, pipeline: "p", configHash: "c", templateValues: [:], dedupeKey: nil,
            keepStages: false, existingID: nil)
    }

    /// `PRAGMA wal_checkpoint(PASSIVE)` from a connection of its own: (frames in the log, frames folded back).
    static func checkpoint(_ path: String) throws -> (log: Int64, folded: Int64) {
        let other = try Database(path: path, create: false)
        let row = try #require(try other.prepare("PRAGMA wal_checkpoint(PASSIVE)").rows().first)
        return (row[1].int ?? -1, row[2].int ?? -1)
    }

    /// A lookup must not leave a read transaction open on its pooled connection: one did (a snapshot renewed every
    /// 5,000 lookups, and the run's first lookup, `knows(root:)`, was its only one for a new batch), and no
    /// checkpoint could fold back any frame written after it — the log grew to 227 MB over 10,000 files.
    @Test func lookupsLeaveTheLogFreeToBeFoldedBack() throws {
        let folder = try TemporaryFolder("wal-fold")
        defer { folder.remove() }
        let path = folder.path + "/journal.sqlite"
        let journal = try SQLiteJournal(path: path)
        #expect(try journal.knows(root: "/media") == false)
        #expect(try journal.record(root: "/media", relativePath: "none.txt") == nil)
        for index in 0..<300 {
            try journal.finish(Self.start(index), id: nil, state: .done, failures: [], reason: nil, facts: [:])
        }
        try journal.commit()
        let folded = try Self.checkpoint(path)
        #expect(folded.log > 0)
        #expect(folded.folded == folded.log, "the run's read connections held back the checkpoint")
        // And after lookups between the batches, as a resumed run makes them.
        for index in 300..<600 {
            _ = try journal.record(root: "/media", relativePath: "f\(index - 300).txt")
            try journal.finish(Self.start(index), id: nil, state: .done, failures: [], reason: nil, facts: [:])
        }
        try journal.commit()
        let again = try Self.checkpoint(path)
        #expect(again.folded == again.log, "the run's read connections held back the checkpoint")
        try journal.close()
    }
}
