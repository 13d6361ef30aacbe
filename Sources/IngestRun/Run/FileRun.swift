import Foundation
import IngestConfig
import IngestCore
import IngestFiles
import IngestJournal
import IngestStages

/// What a file's way through the stages needs of its run, fixed for the run: handed to each `FileRun` as a value,
/// so a file's run reads nothing else of the `Runner`.
struct FileRunPlan: Sendable {
    let stages: [ConfiguredStage]
    let settings: RunSettings
    /// Counters for a live display; nil when nothing shows progress.
    let progress: RunProgress?
    let cancellation: RunCancellation
    /// `max_work_bytes`, when the pipeline transcodes.
    let workBudget: WorkBudget?
    /// True when done files are hashed for the journal's content check (the pipeline uploads or transcodes).
    let hashesDoneFiles: Bool
    /// True when a journal records the run: stages keep the content hash they read.
    let journaled: Bool
    /// The run's journal, for a stage that keeps what must survive a killed run (a tus upload's URL).
    let journal: (any JournalStore)?
}

/// One file on its way through the stages, once the journal let it through: the item, its journal row (nil without a
/// journal), and how the file ends — journaled, then reported with its facts and timings.
struct FileRun {
    let plan: FileRunPlan
    /// The worker's slot in the live display.
    let id: Int
    /// The file on its way: where it is and what it was when listed (`item.file`), and what its stages found.
    let item: Item
    let journaled: JournaledFile?
    /// Where stages that move bytes report how far they got; nil when nothing shows progress.
    private let reportBytes: (@Sendable (Int64, Int64?) -> Void)?

    init(plan: FileRunPlan, id: Int, item: Item, journaled: JournaledFile?) {
        self.plan = plan
        self.id = id
        self.item = item
        self.journaled = journaled
        if let progress = plan.progress {
            reportBytes = { @Sendable done, total in progress.bytes(id, done: done, total: total) }
        } else {
            reportBytes = nil
        }
    }

    /// Runs the stages within the work budget (`max_work_bytes`), if any; the file's report.
    func run() -> ItemReport {
        guard let workBudget = plan.workBudget else { return runStages() }
        guard workBudget.reserve(item.size) else {
            return finish(.failed, [FileRun.overWorkBudget(size: item.size, limit: workBudget.limit)])
        }
        defer { if item.size > 0 { workBudget.release(item.size) } }
        return runStages()
    }

    private func runStages() -> ItemReport {
        // The listed file's stat (`item.validated`) is the identity the journal keys the file by: every stage must
        // find that very file.
        var last: String?
        // The stages done so far whose answer a later stage may have renewed, by `as:` name (see `TicketRenewal`).
        var renewable: [String: Int] = [:]
        // An upload that ran (or whose journaled result is reused) and did not end the file: `on_success` may go on.
        var delivered = false
        // Stages run in a shared frame pass with an earlier one (`FileRun+FramePass`).
        var passed = Set<Int>()
        for (position, configured) in plan.stages.enumerated() where !passed.contains(position) {
            if plan.cancellation.isCancelled { return interrupted(configured.name, []) }
            if let condition = configured.condition, !condition.matches(item) { continue }
            if !reuseJournaledResults(of: configured, at: position) {
                if let changed = item.changedFailure(stage: configured.name, found: "before stage \(configured.name)") {
                    return finish(.failed, [changed])
                }
                let group = framePassGroup(from: position)
                passed.formUnion(group)
                let ending =
                    group.count > 1
                    ? runFramePass(group) : runStage(configured, at: position, renewable: renewable)
                if let ending { return ending }
                last = configured.name
            }
            if let name = configured.resultName, configured.stage.renewsAnswer { renewable[name] = position }
            // An upload of an output (a poster, a proxy) does not deliver the file itself.
            if let upload = configured.stage as? UploadStage, upload.outputName == nil { delivered = true }
        }
        // The hash lets a touched or copied file be recognised next time; taken only where redoing a file costs
        // more than reading it once more (uploads, transcodes), unless a key or template already read it — and
        // before the last look at the file, so it is of the file that look vouches for.
        if journaled != nil && item.journalIdentity == nil && plan.hashesDoneFiles { _ = try? item.contentIdentity() }
        if let last, let changed = item.changedFailure(stage: last, found: "after stage \(last)") {
            return finish(.failed, [changed])
        }
        var report = finish(.passed)
        report.delivered = delivered && report.status == .passed
        return report
    }

    /// A network stage done before a crash or failure: its results are reused, the call (an upload …) is not
    /// repeated. False when the stage has to run.
    private func reuseJournaledResults(of configured: ConfiguredStage, at position: Int) -> Bool {
        guard let done = journaled?.reusableResults(at: position) else { return false }
        for (key, value) in done.outputs.pairs {
            // `result:NAME` is the answer as sent (signed URLs intact) for templates; the rest are facts.
            if key.hasPrefix("result:") { item.templateValues[key] = value } else { item.facts[key] = value }
        }
        return true
    }

    /// Runs one stage — a network stage between its journal barriers — and returns the file's report when the file
    /// ends with it (failed, skipped or interrupted); nil to go on.
    private func runStage(_ configured: ConfiguredStage, at position: Int, renewable: [String: Int]) -> ItemReport? {
        plan.progress?.stage(id, configured.name)
        // Local stages need no record of their own: redoing them after a crash changes nothing outside.
        let journaled = configured.usesNetwork ? self.journaled : nil
        do {
            try journaled?.stageStarted(position: position, name: configured.name, item: item)
        } catch {
            // Nothing is sent that the journal could not record as started.
            return finish(
                .failed, [RuleFailure(stage: configured.name, rule: .journal, message: "not started: \(error)")])
        }
        let before = item.facts
        let (outcome, failures) = explained(
            perform(configured, at: position, renewable: renewable), stage: configured.name)
        if !failures.isEmpty && plan.cancellation.isCancelled { return interrupted(configured.name, failures) }
        do {
            try journaled?.stageFinished(
                item, stage: configured, position: position, outcome: outcome, failures: failures, factsBefore: before)
        } catch {
            let failure = RuleFailure(
                stage: configured.name, rule: .journal,
                message: "finished, but the journal could not record it (the next run repeats it): \(error)")
            return finish(.failed, failures + [failure])
        }
        if !failures.isEmpty { return finish(.failed, failures) }
        if case .skip(let reason) = outcome { return finish(.skipped, skip: reason) }
        return nil
    }

    /// Calls the stage, timed (a ticket it renews on the way included): a thrown `ItemFailed` gives its failures,
    /// any other error one failure of its own.
    private func perform(_ configured: ConfiguredStage, at position: Int, renewable: [String: Int]) -> (
        StageOutcome, [RuleFailure]
    ) {
        let context = context(for: configured, at: position)
        let stageBegan = item.timings.clock.now
        var outcome = StageOutcome.proceed
        var failures: [RuleFailure] = []
        do {
            outcome = try runRenewingTicket(configured, at: position, context: context, renewable: renewable)
        } catch let failed as ItemFailed {
            failures = failed.failures
        } catch {
            failures = [RuleFailure(stage: configured.name, rule: .error, message: "\(error)")]
        }
        item.timings.stage(configured.name, seconds: item.timings.clock.now - stageBegan)
        return (outcome, failures)
    }

    /// A stage that failed on a file changed under it says so first.
    private func explained(_ result: (StageOutcome, [RuleFailure]), stage: String) -> (StageOutcome, [RuleFailure]) {
        let (outcome, failures) = result
        guard !failures.isEmpty, !failures.contains(where: { $0.rule == .changed }),
            let changed = item.changedFailure(stage: stage, found: "during stage \(stage)")
        else { return result }
        return (outcome, [changed] + failures)
    }

    /// What the stage at `position` sees of the run: the journal's say on it, the file's logger and timings.
    func context(for configured: ConfiguredStage, at position: Int) -> StageContext {
        var context = StageContext(
            settings: plan.settings, resultName: configured.resultName, progress: reportBytes, position: position,
            cancellation: plan.cancellation)
        if let progress = plan.progress {
            context.status = { @Sendable [id] text in progress.note(id, text) }
        }
        context.wantsContentHash = plan.journaled
        context.mayHaveRunBefore = journaled?.cutShort.contains(position) ?? false
        context.uploadJournal = journaled?.uploadJournal(position: position)
        context.deliveredOutputs = deliveredOutputs()
        context.logger?[metadataKey: "file"] = .string(item.path)
        context.logger?[metadataKey: "stage"] = .string(configured.name)
        context.timings = item.timings
        context.journal = plan.journal
        return context
    }

    /// Ends the file: journals how it ended, then reports it.
    func finish(_ status: ItemStatus, _ failures: [RuleFailure] = [], skip: String? = nil) -> ItemReport {
        guard let journaled else { return report(status, failures, skip: skip) }
        do {
            try journaled.finish(item, status: status, failures: failures, skip: skip)
        } catch {
            let failure = RuleFailure(
                stage: "journal", rule: .write,
                message: "the file's result could not be journaled (the next run redoes it): \(error)")
            return report(.failed, failures + [failure])
        }
        return report(status, failures, skip: skip)
    }

    /// A cancelled run's file: reported as failed, and left as it is in the journal (a network stage stays
    /// "started", the row "running"), exactly as after a kill, so the next run repeats what was cut short.
    func interrupted(_ stage: String, _ failures: [RuleFailure]) -> ItemReport {
        let failure =
            failures.first { $0.rule == .interrupted }
            ?? ItemFailed.interrupted(stage: stage, reason: plan.cancellation.reason, during: "stage \(stage)")
            .failures[0]
        return report(.failed, [failure])
    }

    /// The file's report, with its facts and timings as they stand.
    private func report(_ status: ItemStatus, _ failures: [RuleFailure] = [], skip: String? = nil) -> ItemReport {
        var report = ItemReport(item.file, status: status, failures: failures, skipReason: skip, facts: item.facts)
        report.timings = item.timings.json
        report.seconds = item.timings.seconds
        report.poster = PosterPreview(item)
        return report
    }

    static func overWorkBudget(size: Int64, limit: Int64) -> RuleFailure {
        RuleFailure(
            stage: "input", rule: .maxWorkBytes,
            message: "needs about \(ByteSize.format(size)) of work space (its size), more than max_work_bytes allows",
            expected: "≤ \(ByteSize.format(limit))", actual: ByteSize.format(size))
    }
}
