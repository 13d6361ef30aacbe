import Foundation
import Testing

@testable import IngestJournal
@testable import IngestTestSupport
@testable import IngestJournalTestSupport

/// `ingest status` on a PostgreSQL journal: a `running` file under a live lease is in progress, held by that
/// worker's pid on its host; one whose worker stopped renewing (its lease expired) is interrupted.
@Suite struct PostgresStatusTests {
    @Test(.postgres) func aLiveLeaseIsInProgressAnExpiredOneIsInterrupted() throws {
        let server = try PostgresServer.shared()
        let url = try server.createDatabase()
        func start(_ name: String) -> JournalStart {
            JournalStart(
                root: "/r", relativePath: name, path: "r/" + name, size: 1, modified: 1, inode: 1, sha256: nil,
                pipeline: "p", configHash: "c", templateValues: [:], dedupeKey: nil, keepStages: false,
                existingID: nil)
        }
        let live = try PostgresJournal(url: url, leaseSeconds: 30)
        #expect(try live.lease(root: "/r", relativePath: "live.mov") == .granted)
        _ = try live.begin(start("live.mov"))
        let stuck = try PostgresJournal(url: url, writer: true, leaseSeconds: 30, workLockPath: nil, renews: false)
        #expect(try stuck.lease(root: "/r", relativePath: "stuck.mov") == .granted)
        _ = try stuck.begin(start("stuck.mov"))
        try stuck.ageLeases(by: 31)  // its worker stopped renewing 31 s ago

        let reader = try PostgresJournal(url: url, writer: false)
        let holders = try reader.liveHolders()
        var seen: [String: String?] = [:]
        try reader.forEachRecord { seen[$0.relativePath] = holders.holder(of: $0) }
        let host = ProcessInfo.processInfo.hostName
        #expect(seen["live.mov"] == .some("pid \(getpid()) on \(host)"), "\(seen)")
        #expect(seen["stuck.mov"] == .some(nil), "\(seen)")

        let status = try runCommand(TestPaths.ingest, ["status", "--journal", url])
        #expect(
            status.stdout.contains("RUN   r/live.mov  in progress (held by pid \(getpid()) on \(host))"),
            "\(status.stdout)")
        #expect(status.stdout.contains("STOP  r/stuck.mov  interrupted"), "\(status.stdout)")
        #expect(status.status == 1)
        try live.close()
        try stuck.close()
    }
}
