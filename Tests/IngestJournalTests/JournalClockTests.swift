import Foundation
import NativeSQLite
import Testing

@testable import IngestCore
@testable import IngestJournal
@testable import IngestTestSupport

/// Issue 32 §6: a journal row's `updated_at` (for a started stage, when its call began) is read on the journal's
/// clock, the run's, so a run on a `ManualClock` dated 2027 writes 2027, not today.
@Suite struct JournalClockTests {
    @Test func aJournalRowIsDatedByTheJournalsClock() throws {
        let folder = try TemporaryFolder("journal-clock")
        defer { folder.remove() }
        let clock = ManualClock(date: Date(timeIntervalSince1970: 1_800_000_000))
        let path = folder.path + "/journal.sqlite"
        let journal = try SQLiteJournal(path: path, clock: clock)
        let start = JournalStart(
            root: "/media", relativePath: "a.txt", path: "media/a.txt", size: 10, modified: 1, inode: 1,
            sha256: nil, pipeline: "p", configHash: "c", templateValues: [:], dedupeKey: nil, keepStages: false,
            existingID: nil)
        clock.advance(by: 90)
        try journal.finish(start, id: nil, state: .done, failures: [], reason: nil, facts: [:])
        try journal.commit()
        let row = try Database(path: path, create: false).prepare("SELECT updated_at FROM files").rows().first
        #expect(row?.first?.int == 1_800_000_090)
    }
}
