import Foundation
import Testing

@testable import IngestConfig
@testable import IngestCore
@testable import IngestJournal
@testable import IngestRun
@testable import IngestTestSupport
@testable import IngestJournalTestSupport

/// What a file costs in waits for the PostgreSQL server, counted (not timed): each round trip is a wait, and with
/// several workers on a shared journal they were what a batch of small files spent its time on (issue 19: about 18
/// per file, 38 s for 10,000 files on 4 workers). Work is leased in batches, a file already done is skipped without
/// writing a lease, and a file's journal writes go in as few requests as its barriers allow.
@Suite(.serialized) struct PostgresJournalCostTests {
    static let files = 300

    /// `validate` + `upload { method: local }` over `files` small files, once on an empty journal and once more,
    /// every file then done: the round trips of each run, and its summary.
    func twoRuns(_ folder: TemporaryFolder, url: String) throws -> [(summary: RunSummary, roundTrips: Int)] {
        for index in 0..<Self.files { try folder.file("in/d\(index % 3)/f\(index).txt", "file \(index)") }
        let pipeline = try Pipeline.parse(
            yaml: """
                version: 1
                name: pg-cost
                concurrency: 2
                stages:
                  - validate: { extensions: [txt], sniff: false }
                  - upload: { method: local, dir: \(folder.path)/out }
                """, source: "test.yml", environment: [:])
        return try (0..<2).map { _ in
            let journal = try PostgresJournal(url: url, leaseSeconds: 30)
            let runner = Runner(
                pipeline: pipeline, settings: RunSettings(workDirectory: folder.path + "/work"), journal: journal)
            let summary = try runner.run(paths: [folder.path + "/in"]) { _ in }
            try journal.close()
            return (summary, journal.roundTrips)
        }
    }

    @Test(.postgres) func aFileCostsAFewRoundTripsAndADoneFileAlmostNone() throws {
        let url = try PostgresServer.shared().createDatabase()
        let folder = try TemporaryFolder("pg-cost")
        defer { folder.remove() }
        let runs = try twoRuns(folder, url: url)
        let count = Self.files
        #expect(runs[0].summary.passed == count)
        // The upload's two barriers (started, with the file's row; finished) and the file's result with the end of
        // its lease: three, plus the leases, taken a batch at a time.
        #expect(runs[0].roundTrips <= count * 7 / 2, "\(runs[0].roundTrips) round trips for \(count) new files")
        #expect(runs[1].summary.skipped == count)
        // Done files: their records are read a batch at a time, and no lease is written for them.
        #expect(runs[1].roundTrips <= count / 10, "\(runs[1].roundTrips) round trips for \(count) done files")
        let journal = try PostgresJournal(url: url, writer: false)
        #expect(try journal.counts() == [.done: count])
        var attempts = 0
        try journal.forEachRecord { attempts += $0.attempts }
        #expect(attempts == count)
    }
}
