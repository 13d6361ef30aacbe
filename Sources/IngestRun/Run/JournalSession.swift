import Foundation
import IngestConfig
import IngestCore
import IngestFiles
import IngestJournal
import IngestStages
import IngestTemplates
import NativeSystem
import Synchronization

/// What a journaled run does with files the journal already knows.
package enum ResumePolicy: Sendable, Equatable {
    /// Skip files done with the same content and pipeline; redo changed, failed and interrupted ones.
    case resume
    /// Redo every file.
    case force
    /// Redo only files that failed or were interrupted; leave the rest alone.
    case retryFailed
}

/// Skip reasons the journal gives.
package enum JournalReason {
    package static let alreadyDone = "already done (journal)"
}

/// A root the walker started from, as the journal keys it, and whether the journal has any file under it.
struct JournalRoot {
    var canonical: String
    var known: Bool
    /// What a run without a journal passes along: no journal call reads it.
    static let unjournaled = JournalRoot(canonical: "", known: false)
}

/// The runner's one line to the journal for the run and for each file before its stages: the pipeline's name, the
/// roots, leases on a shared journal, the journal's say on a file (skip it, resume it, or run it afresh) and the
/// closing commit. What is journaled while a file's stages run goes through that file's `JournaledFile`.
final class JournalSession: Sendable {
    let store: any JournalStore
    private let pipeline: Pipeline
    private let stages: [ConfiguredStage]
    private let resume: ResumePolicy
    /// True when the pipeline talks to the network: `uuid` and `date` are fixed and journaled before any stage.
    /// (Elsewhere they are made on first use, and journaled when the file is done.)
    private let fixesNamesFirst: Bool
    private let canonicalRoots = Mutex<[String: JournalRoot]>([:])

    init(store: any JournalStore, pipeline: Pipeline, stages: [ConfiguredStage], resume: ResumePolicy) {
        self.store = store
        self.pipeline = pipeline
        self.stages = stages
        self.resume = resume
        fixesNamesFirst = stages.contains { $0.usesNetwork }
    }

    /// The answer to a file's lease on a shared journal (a local one always grants it).
    enum LeaseAnswer {
        case granted
        /// Another worker holds the file now: ask again later.
        case heldElsewhere
        /// Nothing to run: this is the file's report (finished by another worker, or the lease failed).
        case report(ItemReport)
    }

    /// The journal's say on a file whose lease was granted.
    enum Preparation {
        /// Nothing to run: this is the file's report (done before, a duplicate, not failed under `--retry-failed`).
        case report(ItemReport)
        /// Run the stages, journaling them in this row.
        case run(JournaledFile)
        /// Not yet: a call an earlier run cut short may still be in flight until `until` (`why` says which); the
        /// file is set aside, other files go on, and it is prepared again then.
        case wait(until: Date, why: String)
    }

    /// Names the pipeline in the journal as the run starts.
    func recordPipelineName() throws { try store.setMeta("pipeline", pipeline.name) }

    /// Seconds between asks for files other workers held.
    var leasePollInterval: Double { store.leasePollInterval }

    func commit() throws { try store.commit() }

    /// The journal's files in the work folder's parent (with their side and lock files): never inputs, never cleared.
    var localFiles: [String] { store.localFiles }

    /// `JournalRecord.canonicalRoot`, and whether the journal has any file under it, worked out once per root rather
    /// than once per file.
    func root(of root: String) -> JournalRoot {
        canonicalRoots.withLock { canonicalRoots in
            if let known = canonicalRoots[root] { return known }
            let canonical = JournalRecord.canonicalRoot(root)
            let answer = JournalRoot(canonical: canonical, known: (try? store.knows(root: canonical)) ?? true)
            canonicalRoots[root] = answer
            return answer
        }
    }

    /// Forgets the roots the journal had no file under: `watch` finishes files there and may see them again.
    func forgetUnknownRoots() { canonicalRoots.withLock { $0 = $0.filter { $0.value.known } } }

    /// Asks a shared journal for the file; a local one always says yes.
    func lease(_ entry: InputEntry, root: JournalRoot) -> LeaseAnswer {
        let answer: JournalLease
        do {
            answer = try store.lease(root: root.canonical, relativePath: entry.relativePath)
        } catch {
            return .report(
                ItemReport(
                    entry, status: .failed,
                    failures: [RuleFailure(stage: "journal", rule: .lease, message: "\(error)")]
                ))
        }
        switch answer {
        case .granted: return .granted
        case .heldElsewhere: return .heldElsewhere
        case .handledElsewhere(let owner):
            return .report(
                ItemReport(entry, status: .skipped, skipReason: "finished by another worker (\(owner)); see its report")
            )
        }
    }

    func endLease(_ entry: InputEntry, root: JournalRoot) {
        store.endLease(root: root.canonical, relativePath: entry.relativePath)
    }

    /// Journals a file that failed before any stage ran (unreadable, or its dedupe key could not be made).
    func recordFailed(_ entry: InputEntry, root: JournalRoot, failures: [RuleFailure], templateValues: JSONObject) {
        try? store.recordWithoutWork(
            root: root.canonical, relativePath: entry.relativePath, path: entry.path, pipeline: pipeline.name,
            configHash: pipeline.configHash, state: .failed, failures: failures, reason: nil, duplicateOf: nil,
            templateValues: templateValues)
    }

    /// The journal's say on a file before any stage runs: skip it (done with the same content and pipeline, a
    /// duplicate, not failed under `--retry-failed`) or run it, fixing its `uuid` and `date` and claiming its dedupe
    /// key first.
    func prepare(_ entry: InputEntry, item: Item, root: JournalRoot, settings: RunSettings) -> Preparation {
        func failed(_ failures: [RuleFailure]) -> Preparation {
            recordFailed(entry, root: root, failures: failures, templateValues: item.templateValues)
            return .report(ItemReport(entry, status: .failed, failures: failures))
        }
        let status: FileStatus
        do {
            // The walker's stat, taken a moment ago (one `stat` per file, not two).
            if let known = item.validated {
                status = FileStatus(known)
            } else {
                status = try FileStatus(path: entry.path, followLinks: true)
            }
        } catch {
            return failed([RuleFailure(stage: "input", rule: .unreadable, message: "cannot open: \(error.reason)")])
        }
        do {
            let record = root.known ? try store.record(root: root.canonical, relativePath: entry.relativePath) : nil
            let sameContent = try hasSameContent(record, status: status, item: item)
            if let reason = skipReason(record, sameContent: sameContent) {
                var report = ItemReport(entry, status: .skipped, skipReason: reason.text, facts: reason.facts)
                if let record, reason.text == JournalReason.alreadyDone, pipeline.disposal.onSuccess != nil {
                    report.delivered = try wasDelivered(record)
                }
                return .report(report)
            }
            let resuming = sameContent && resume != .force && (record?.state == .running || record?.state == .failed)
            let earlier = try stagesOf(resuming ? record : nil, now: settings.clock.date)
            if let wait = earlier.wait { return .wait(until: wait.until, why: wait.why) }
            fixNames(of: item, record: record)
            let key = try pipeline.dedupe?.render(for: item, settings: settings)
            if let key, let reason = try claim(key, entry: entry, item: item, root: root, record: record) {
                return .report(ItemReport(entry, status: .skipped, skipReason: reason))
            }
            let start = JournalStart(
                root: root.canonical, file: item.validated == nil ? item.file.relisted(status) : item.file,
                sha256: item.journalIdentity, pipeline: pipeline.name, configHash: pipeline.configHash,
                templateValues: item.templateValues, dedupeKey: key, keepStages: resuming, existingID: record?.id)
            return .run(
                JournaledFile(store: store, start: start, restored: earlier.restored, cutShort: earlier.cutShort))
        } catch let failure as ItemFailed {
            return failed(failure.failures)
        } catch {
            return .report(
                ItemReport(
                    entry, status: .failed,
                    failures: [RuleFailure(stage: "journal", rule: .error, message: "\(error)")]
                ))
        }
    }

    /// True when an `upload` stage of the run that finished `record` delivered it (`on_success` may then dispose of
    /// it): a file done with every upload left out by `when:` was never sent, and stays.
    private func wasDelivered(_ record: JournalRecord) throws -> Bool {
        try store.stages(fileID: record.id).contains { $0.name == UploadStage.name && $0.status == .done }
    }

    /// True when the journal's record is of this very content under this pipeline (not under `--force`): the same
    /// size, mtime and inode, or — touched or copied — the same content identity, XXH3-128 or an older journal's
    /// SHA-256 (the record's identity is then refreshed).
    private func hasSameContent(_ record: JournalRecord?, status: FileStatus, item: Item) throws -> Bool {
        guard let record, resume != .force, record.configHash == pipeline.configHash else { return false }
        if record.size == status.size && record.modified == status.modified && record.inode == status.inode {
            item.restoreIdentity(record.sha256)
            return true
        }
        guard record.size == status.size, let known = record.sha256 else { return false }
        // Touched or copied: the content decides.
        let same = try item.hasContent(identifiedBy: known)
        if same && record.state == .done {
            try store.refreshIdentity(
                fileID: record.id, size: status.size, modified: status.modified, inode: status.inode)
        }
        return same
    }

    /// True when `record` says the file at `status` is done under this pipeline with this very content (its size,
    /// mtime and inode), and `prepare` will skip it: what needs no lease on a shared journal.
    func isDone(_ record: JournalRecord, status: FileStatus) -> Bool {
        guard resume == .resume, record.configHash == pipeline.configHash,
            record.state == .done || (record.state == .skipped && record.duplicateOf == nil)
        else { return false }
        return record.size == status.size && record.modified == status.modified && record.inode == status.inode
    }

    /// Why the file needs no run (done before with the same content, or not failed under `--retry-failed`) and the
    /// facts its report shows; nil when it runs.
    private func skipReason(_ record: JournalRecord?, sameContent: Bool) -> (text: String, facts: JSONObject)? {
        if let record, sameContent {
            if record.state == .done { return (JournalReason.alreadyDone, record.facts) }
            if record.state == .skipped && record.duplicateOf == nil {
                return (JournalReason.alreadyDone + ": " + (record.reason ?? "skipped"), record.facts)
            }
        }
        if resume == .retryFailed {
            guard let record, record.state == .failed || record.state == .running else {
                return (
                    record == nil
                        ? "not in the journal as failed (--retry-failed)" : "not failed before (--retry-failed)", [:]
                )
            }
        }
        return nil
    }

    /// The remote name a re-run must reuse is decided here and journaled by `begin`, before any stage.
    private func fixNames(of item: Item, record: JournalRecord?) {
        if let record {
            for key in ["uuid", "date"] { item.templateValues[key] = record.templateValues[key] }
        }
        if fixesNamesFirst {
            _ = JournalTemplate.uuid(of: item)
            _ = JournalTemplate.date(of: item)
        }
    }

    /// Claims the file's dedupe key; when another file holds it, journals this one as its duplicate and returns why
    /// it is skipped.
    private func claim(
        _ key: String, entry: InputEntry, item: Item, root: JournalRoot, record: JournalRecord?
    ) throws -> String? {
        guard
            let holder = try store.claim(
                key: key, root: root.canonical, relativePath: entry.relativePath, path: entry.path,
                excluding: record?.id)
        else { return nil }
        let reason = "duplicate of \(holder) (dedupe key '\(key)')"
        try store.recordWithoutWork(
            root: root.canonical, relativePath: entry.relativePath, path: entry.path, pipeline: pipeline.name,
            configHash: pipeline.configHash, state: .skipped, failures: [], reason: reason, duplicateOf: holder,
            templateValues: item.templateValues)
        return reason
    }

    /// The network stages an earlier run of `record` finished (reused) or cut short (asked to verify first) — those
    /// still at the same position under the same name — and, when one of them was started by a run that died and
    /// may still be in flight, until when the file must wait.
    private func stagesOf(_ record: JournalRecord?, now: Date) throws -> (
        restored: [Int: JournalStage], cutShort: Set<Int>, wait: (until: Date, why: String)?
    ) {
        var restored: [Int: JournalStage] = [:]
        var cutShort: Set<Int> = []
        var wait: (until: Date, why: String)?
        guard let record else { return (restored, cutShort, nil) }
        for stage in try store.stages(fileID: record.id) {
            guard stage.position < stages.count, stages[stage.position].name == stage.name,
                stages[stage.position].usesNetwork
            else { continue }
            switch stage.status {
            case .done: restored[stage.position] = stage
            case .started, .failed:
                cutShort.insert(stage.position)
                if stage.status == .started, let settle = settleTime(of: stage), settle.until > now,
                    settle.until > wait?.until ?? .distantPast
                {
                    wait = settle
                }
            case .skipped: break
            }
        }
        return (restored, cutShort, wait)
    }

    /// When a call journaled as started (by a run that died mid-call, or a worker whose lease was taken over) can no
    /// longer be in flight: its start plus the stage's settle time. The journal keeps whole seconds, so the start
    /// is taken as the end of its second. nil when the stage verifies nothing.
    private func settleTime(of stage: JournalStage) -> (until: Date, why: String)? {
        let configured = stages[stage.position]
        guard let settle = configured.stage.settleSeconds, let started = stage.updatedAt else { return nil }
        let until = Date(timeIntervalSince1970: Double(started) + 1 + settle)
        let began = RunLogHandler.timestamp(Date(timeIntervalSince1970: Double(started)))
        return (
            until,
            "its '\(configured.name)' call (stage \(stage.position + 1)) was started at \(began) by a run that "
                + "did not finish it and may still be in flight: verified once \(JSONValue.format(settle)) s (settle) "
                + "have passed"
        )
    }
}
