import Foundation

/// Where a run keeps track of its files: the SQLite file of one machine (`SQLiteJournal`), or a PostgreSQL database that
/// workers on several machines share as journal and work queue (`PostgresJournal`). The runner and the `status` and
/// `report` commands talk to either the same way.
public protocol JournalStore: AnyObject, Sendable {
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
}

/// The journal's answer to `lease`.
public enum JournalLease: Sendable, Equatable {
    /// This worker may work on the file (until `endLease`).
    case granted
    /// Another worker is working on it now (its lease is live); asked again later.
    case heldElsewhere(owner: String)
    /// Another worker finished it since this run started.
    case handledElsewhere(owner: String)
}

extension JournalStore {
    /// A file that failed before it began (no network stage ran, nothing left the machine) gives its dedupe key
    /// back, so another copy of its content may go ahead at once.
    func releaseKey(of start: JournalStart, id: Int64?, state: JournalState) {
        if state == .failed, let key = start.dedupeKey, id == nil { release(key: key) }
    }
}
