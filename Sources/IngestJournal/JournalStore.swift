import Foundation
import IngestCore

/// Where a run keeps track of its files: the SQLite file of one machine (`SQLiteJournal`), or a PostgreSQL database that
/// workers on several machines share as journal and work queue (`PostgresJournal`). The runner and the `status` and
/// `report` commands talk to either the same way.
package protocol JournalStore: AnyObject, Sendable, StageJournal {
    /// What messages call the journal: its file, or the database URL with the password redacted.
    var path: String { get }
    /// Files of this journal that live in the work folder's parent and must survive its clean-up.
    var localFiles: [String] { get }

    func setMeta(_ key: String, _ value: String) throws
    func meta(_ key: String) throws -> String?
    /// Makes everything written so far durable; throws if an earlier batch could not be written.
    func commit() throws
    func close() throws

    func knows(root: String) throws -> Bool
    func record(root: String, relativePath: String) throws -> JournalRecord?
    /// Claims a dedupe key for the file `relativePath` under `root` (opened as `path`): nil when it is now this
    /// file's, else the path of the file that holds it.
    func claim(key: String, root: String, relativePath: String, path: String, excluding existingID: Int64?) throws
        -> String?
    func release(key: String)
    func begin(_ start: JournalStart) throws -> Int64
    func finish(
        _ start: JournalStart, id: Int64?, state: JournalState, failures: [RuleFailure], reason: String?,
        facts: JSONObject) throws
    func stageStarted(fileID: Int64, position: Int, name: String, barrier: Bool) throws
    func stageFinished(
        fileID: Int64, position: Int, name: String, status: JournalStage.Status, outputs: JSONObject,
        error: String?, barrier: Bool) throws
    func recordWithoutWork(
        root: String, relativePath: String, path: String, pipeline: String, configHash: String, state: JournalState,
        failures: [RuleFailure], reason: String?, duplicateOf: String?, templateValues: JSONObject) throws
    func refreshIdentity(fileID: Int64, size: Int64, modified: Int64, inode: UInt64) throws

    func stages(fileID: Int64) throws -> [JournalStage]
    func counts() throws -> [JournalState: Int]
    func forEachRecord(_ body: (JournalRecord) throws -> Void) throws
    /// Who works on the `running` files now: a live run (SQLite) or the live leases (PostgreSQL).
    func liveHolders() throws -> JournalHolders

    /// Asks to work on a file. A journal of one machine always grants it; a shared one grants it unless another
    /// worker holds a live lease on it, and takes over a lease whose worker stopped renewing it (a crash).
    func lease(root: String, relativePath: String) throws -> JournalLease
    /// Gives the file back once its result is recorded (or it was skipped).
    func endLease(root: String, relativePath: String)
    /// Seconds between two looks at files other workers hold, while this worker waits for them to finish.
    var leasePollInterval: Double { get }

    // Batches (default implementations below, for a journal of one machine).
    var leasesAhead: Bool { get }
    func leaseAhead(_ files: [JournalFileKey], needsLease: (JournalFileKey, JournalRecord?) -> Bool) throws
    func begin(_ start: JournalStart, stageAt position: Int, name: String) throws -> Int64
}

/// A file as the journal keys it: its canonical root and its path under that root.
package struct JournalFileKey: Sendable, Hashable {
    package var root: String
    package var relativePath: String

    package init(root: String, relativePath: String) {
        self.root = root
        self.relativePath = relativePath
    }
}

/// The journal's answer to `lease`.
package enum JournalLease: Sendable, Equatable {
    /// This worker may work on the file (until `endLease`).
    case granted
    /// Another worker is working on it now (its lease is live); asked again later.
    case heldElsewhere(owner: String)
    /// Another worker finished it since this run started.
    case handledElsewhere(owner: String)
}

extension JournalStore {
    /// True for a journal that answers `leaseAhead`: the runner then hands it the files a batch at a time.
    package var leasesAhead: Bool { false }

    /// Asks about the next `files` at once, before workers take them one by one: a shared journal reads their
    /// records and leases those `needsLease` says need one (not a file done with the same content), so `lease` and
    /// `record` answer from memory. A journal of one machine has nothing to gain.
    package func leaseAhead(_ files: [JournalFileKey], needsLease: (JournalFileKey, JournalRecord?) -> Bool) throws {}

    /// Journals the file's row (`begin`) and its first network stage as started (`stageStarted`, a barrier) before
    /// that stage runs; a shared journal does both in one request.
    package func begin(_ start: JournalStart, stageAt position: Int, name: String) throws -> Int64 {
        let id = try begin(start)
        try stageStarted(fileID: id, position: position, name: name, barrier: true)
        return id
    }

    /// A file that failed before it began (no network stage ran, nothing left the machine) gives its dedupe key
    /// back, so another copy of its content may go ahead at once.
    func releaseKey(of start: JournalStart, id: Int64?, state: JournalState) {
        if state == .failed, let key = start.dedupeKey, id == nil { release(key: key) }
    }
}
