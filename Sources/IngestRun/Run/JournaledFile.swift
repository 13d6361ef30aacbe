import Foundation
import IngestConfig
import IngestCore
import IngestFiles
import IngestJournal
import Synchronization

/// One file's row in the journal while its stages run: what the row will say, its id once written, and the network
/// stages an earlier run finished (their results are reused) or cut short. Each network stage is journaled as
/// started before it runs and as finished right after, as barriers: nothing is sent that the journal could not record.
/// A ticket renewed for a later stage (`stageRenewed`) replaces the answer journaled for the stage that made it.
final class JournaledFile: Sendable {
    private let store: any JournalStore
    private struct Row {
        var start: JournalStart
        /// The row's id once `begin` wrote it (with the first network stage, or when the file ends).
        var id: Int64?
        /// What each network stage done in this run left, by position: a renewal journals its answer over it.
        var outputs: [Int: JSONObject] = [:]
    }
    /// Written by the file's worker (a class, so that `FileRun`, a value, shares one row).
    private let row: Mutex<Row>
    private var id: Int64? { row.withLock { $0.id } }
    /// Network stages an earlier run finished, by position.
    let restored: [Int: JournalStage]
    /// Network stages an earlier run started and never finished (killed mid-call) or failed: their call may have
    /// reached the server, which can answer a repeat with 409.
    let cutShort: Set<Int>

    init(store: any JournalStore, start: JournalStart, restored: [Int: JournalStage], cutShort: Set<Int>) {
        self.store = store
        self.row = Mutex(Row(start: start))
        self.restored = restored
        self.cutShort = cutShort
    }

    /// The results the stage at `position` left in an earlier run, when they can stand in for running it again.
    func reusableResults(at position: Int) -> JournalStage? {
        guard let done = restored[position],
            !JournaledFile.mustRedo(done, nextIsDone: restored[position + 1] != nil)
        else { return nil }
        return done
    }

    /// What the stage at `position` may keep of its own transfer (a multipart upload's parts), once the row exists.
    func uploadJournal(position: Int) -> UploadJournal? {
        guard let id, let parts = store as? any MultipartJournal else { return nil }
        return UploadJournal(
            store: parts, fileID: id, position: position, configHash: row.withLock { $0.start.configHash })
    }

    /// Journals a network stage as started; the row goes in first, with the uuid and date the stage's templates use.
    func stageStarted(position: Int, name: String, item: Item) throws {
        guard let id else {
            let identity = item.journalIdentity
            try row.withLock { row in
                row.start.sha256 = identity
                row.id = try store.begin(row.start, stageAt: position, name: name)
            }
            return
        }
        try store.stageStarted(fileID: id, position: position, name: name, barrier: true)
    }

    /// Journals how a network stage ended, with what it added to the item's facts since `before`.
    func stageFinished(
        _ item: Item, stage configured: ConfiguredStage, position: Int, outcome: StageOutcome,
        failures: [RuleFailure], factsBefore before: JSONObject
    ) throws {
        let status: JournalStage.Status
        var reason: String?
        switch outcome {
        case _ where !failures.isEmpty:
            status = .failed
            reason = failures.map(\.description).joined(separator: "; ")
        case .proceed: status = .done
        case .skip(let why):
            status = .skipped
            reason = why
        }
        let outputs = JournaledFile.outputs(item, since: before, resultName: configured.resultName)
        try store.stageFinished(
            fileID: id ?? 0, position: position, name: configured.name, status: status, outputs: outputs,
            error: reason, barrier: true)
        if status == .done { row.withLock { $0.outputs[position] = outputs } }
    }

    /// Journals how the file ended (local records are batched).
    func finish(_ item: Item, status: ItemStatus, failures: [RuleFailure], skip: String?) throws {
        let (sha256, templateValues, facts) = (item.journalIdentity, item.templateValues, item.facts)
        let state: JournalState = status == .passed ? .done : status == .failed ? .failed : .skipped
        try row.withLock { row in
            row.start.sha256 = sha256
            row.start.templateValues = templateValues
            try store.finish(row.start, id: row.id, state: state, failures: failures, reason: skip, facts: facts)
        }
    }

    /// Journals the answer of the stage at `position`, run again to renew a ticket a later stage found expired, in
    /// place of the answer journaled for it, committed before the later stage uses it: a run resumed after a crash
    /// between that stage and the next must go on with the renewed ticket (its ids, its storage path), not the
    /// expired one's. `before`: the item's facts before the renewal.
    func stageRenewed(_ item: Item, stage configured: ConfiguredStage, position: Int, factsBefore before: JSONObject)
        throws
    {
        guard let id else { return }
        let resultName = configured.resultName
        var renewed = row.withLock { $0.outputs[position] } ?? restored[position]?.outputs ?? [:]
        for (key, value) in JournaledFile.outputs(item, since: before, resultName: resultName).pairs {
            renewed[key] = value
        }
        do {
            try store.stageFinished(
                fileID: id, position: position, name: configured.name, status: .done, outputs: renewed, error: nil,
                barrier: true)
        } catch {
            // Nothing is sent with a ticket the journal could not record.
            throw ItemFailed(
                stage: configured.name, rule: .journal,
                message: "the renewed '\(resultName ?? configured.name)' could not be journaled (not used): \(error)")
        }
        row.withLock { $0.outputs[position] = renewed }
    }

    /// A journal written without the raw answer (`result:NAME`) holds only the redacted facts: a ticket whose signed
    /// URL was redacted cannot be used again, so when the stage after it has not run yet, it is requested anew.
    static func mustRedo(_ stage: JournalStage, nextIsDone: Bool) -> Bool {
        guard !nextIsDone, !stage.outputs.keys.contains(where: { $0.hasPrefix("result:") }) else { return false }
        return JSONValue.object(stage.outputs).serialized().contains(Redaction.placeholder)
    }

    /// What the journal keeps of a finished stage: the facts it added (redacted, as reports show them) and, under
    /// `result:NAME`, the answer as sent, so a resumed file PUTs to the very URL it was given (the same key, not a
    /// second object). The journal is a local file beside the work folder; signed URLs in it expire.
    static func outputs(_ item: Item, since before: JSONObject, resultName: String?) -> JSONObject {
        var outputs = item.facts.added(since: before)
        if let resultName, let raw = item.templateValues["result:" + resultName] {
            outputs["result:" + resultName] = raw
        }
        return outputs
    }
}

extension JSONObject {
    /// The pairs that are new or changed compared with `earlier`: what one stage added to an item's facts.
    func added(since earlier: JSONObject) -> JSONObject {
        var out = JSONObject()
        for (key, value) in pairs where earlier[key] != value { out[key] = value }
        return out
    }
}
