import Foundation
import IngestNative

/// What happened to one input file: the report formats print these.
public struct ItemReport: Sendable {
    /// The path as opened (root joined with the relative path).
    public var path: String
    public var relativePath: String
    public var status: ItemStatus
    /// Every broken rule (empty unless `status` is `.failed`).
    public var failures: [RuleFailure]
    /// Why the file was skipped (a stage decided so; `status` is `.skipped`).
    public var skipReason: String?
    /// Facts the stages recorded (`probe`, `geohash`, results under `as:` names).
    public var facts: JSONObject
    /// The pipeline the file went through, when a report mixes several (`ingest report` on a shared journal).
    public var pipeline: String?
    /// When the file started, seconds per stage, each request's attempts (`FileTimings.json`); nil when no stage
    /// ran (a file skipped before any).
    public var timings: JSONValue?
    /// Seconds the file took (JUnit's `time`); 0 when no stage ran.
    public var seconds: Double = 0

    public init(
        path: String, relativePath: String, status: ItemStatus, failures: [RuleFailure] = [],
        skipReason: String? = nil, facts: JSONObject = JSONObject()
    ) {
        self.path = path
        self.relativePath = relativePath
        self.status = status
        self.failures = failures
        self.skipReason = skipReason
        self.facts = facts
    }

    /// The JSON Lines object: `path`, `status`, `failures[]`, `reason` for skips, and the facts.
    public var json: JSONValue {
        var object: JSONObject = [
            "path": .string(path), "status": .string(status.rawValue), "failures": .array(failures.map(\.json)),
        ]
        if let skipReason { object["reason"] = .string(skipReason) }
        if let pipeline { object["pipeline"] = .string(pipeline) }
        object["facts"] = .object(facts)
        if let timings { object["timings"] = timings }
        return .object(object)
    }
}

/// Counts of a finished run.
public struct RunSummary: Sendable, Equatable {
    public var passed = 0
    public var failed = 0
    public var skipped = 0
    public init() {}
    public var total: Int { passed + failed + skipped }

    /// Counts one more file (for reports rebuilt from the journal).
    public mutating func add(_ status: ItemStatus) { count(status) }

    mutating func count(_ status: ItemStatus) {
        switch status {
        case .passed: passed += 1
        case .failed: failed += 1
        case .skipped: skipped += 1
        }
    }

    /// `3 passed, 1 failed, 0 skipped` — the closing line of every report.
    public var line: String { "\(passed) passed, \(failed) failed, \(skipped) skipped" }
}

/// What a journaled run does with files the journal already knows.
public enum ResumePolicy: Sendable, Equatable {
    /// Skip files done with the same content and pipeline; redo changed, failed and interrupted ones.
    case resume
    /// Redo every file.
    case force
    /// Redo only files that failed or were interrupted; leave the rest alone.
    case retryFailed
}

/// Runs a pipeline over files: a walker lists them lazily, a fixed number of worker threads (the pipeline's
/// `concurrency`) run the stages — on threads of their own, because stages block in C libraries and must not
/// starve Swift's cooperative pool — and results are handed back on the caller's thread in the walker's order,
/// whatever order they finished in. Workers never run further ahead of the oldest unfinished file than a small
/// window, so memory stays bounded on a tree of any size.
///
/// With a journal, files already done are skipped, a stage that uses the network is journaled as started before
/// it runs and as done (with its results) right after, and a file resumed after a crash reuses those results
/// instead of repeating the call.
public final class Runner: @unchecked Sendable {
    public let pipeline: Pipeline
    /// `workDirectory` is the run's own folder inside the work folder while `run` goes on.
    public internal(set) var settings: RunSettings
    /// The stages that run: all of them, or only the local ones for `ingest validate`.
    public let stages: [ConfiguredStage]

    /// Counters for a live display; nil when nothing shows progress.
    public let progress: RunProgress?
    /// Where progress of the batch is kept; nil for `--no-journal` and `ingest validate`.
    public let journal: (any JournalStore)?
    public let resume: ResumePolicy
    /// Set by `cancel(reason:)`: no new file starts, transfers in flight are cancelled, their files end as
    /// interrupted (reported as failed, left unfinished in the journal for the next run).
    public let cancellation = RunCancellation()
    /// The part of the tree this run takes (`--shard I/N`); nil for all of it.
    public let shard: Shard?
    private let workBudget: WorkBudget?
    /// True when the pipeline uploads or transcodes: done files are hashed for the journal's content check.
    private let hashesDoneFiles: Bool
    /// True when the pipeline talks to the network: `uuid` and `date` are fixed and journaled before any stage.
    /// (Elsewhere they are made on first use, and journaled when the file is done.)
    private let fixesNamesFirst: Bool

    public init(
        pipeline: Pipeline, settings: RunSettings, progress: RunProgress? = nil, journal: (any JournalStore)? = nil,
        resume: ResumePolicy = .resume, shard: Shard? = nil
    ) {
        self.pipeline = pipeline
        self.settings = settings
        self.progress = progress
        self.journal = journal
        self.resume = resume
        self.shard = shard
        stages = pipeline.stages.filter { !(settings.offline && $0.usesNetwork) }
        hashesDoneFiles = stages.contains { $0.usesNetwork || $0.writesWorkFiles }
        fixesNamesFirst = stages.contains { $0.usesNetwork }
        if let limit = pipeline.maxWorkBytes, stages.contains(where: \.writesWorkFiles) {
            workBudget = WorkBudget(limit: limit)
        } else {
            workBudget = nil
        }
    }

    /// Walks `paths` and runs every file; `onItem` sees each report in order, on the calling thread. An error
    /// thrown by `onItem` (a report that cannot be written) stops the run after the files in flight and is
    /// rethrown.
    @discardableResult
    public func run(paths: [String], onItem: (ItemReport) throws -> Void) throws -> RunSummary {
        let ignored = ignoredPaths()
        let runFolder = try claimRunFolder()
        defer { if let runFolder { releaseRunFolder(runFolder) } }
        if let journal { try journal.setMeta("pipeline", pipeline.name) }
        let walker = InputWalker(paths: paths, spec: pipeline.input, ignoring: ignored, cancellation: cancellation)
        let shard = self.shard
        if let progress {
            // The total is counted by a second, cheap walk beside the work, so the first file starts at once.
            let spec = pipeline.input
            let counter = Thread { [cancellation] in
                var total = 0
                for entry in InputWalker(paths: paths, spec: spec, ignoring: ignored, cancellation: cancellation)
                where shard?.contains(relativePath: entry.relativePath) ?? true {
                    total += 1
                }
                progress.setTotal(total)
            }
            counter.name = "ingest-count"
            counter.start()
        }
        var summary = RunSummary()
        var failure = drain(
            next: {
                while let entry = walker.next() {
                    if shard?.contains(relativePath: entry.relativePath) ?? true { return entry }
                }
                return nil
            }, summary: &summary, onItem: onItem)
        // Files other workers held (a shared journal): waited for until they are finished or their lease expires.
        while failure == nil, !cancellation.isCancelled, let journal {
            let waiting = takeDeferred()
            if waiting.isEmpty { break }
            Thread.sleep(forTimeInterval: journal.leasePollInterval)
            var iterator = waiting.makeIterator()
            failure = drain(next: { iterator.next() }, summary: &summary, onItem: onItem)
        }
        if let journal {
            do {
                try journal.commit()
            } catch {
                failure = failure ?? error
            }
        }
        if let failure { throw failure }
        return summary
    }

    /// Runs the entries `next` gives on the pipeline's worker threads, handing each report to `onItem` in order;
    /// returns the error `onItem` threw, if any (the run then stops after the files in flight).
    private func drain(
        next: @escaping () -> InputEntry?, summary: inout RunSummary, onItem: (ItemReport) throws -> Void
    ) -> Error? {
        let workers = min(max(1, pipeline.concurrency), Pipeline.maxConcurrency)
        // Reports wait here in path order. A roomy window keeps the workers going while the report writer or the
        // journal's writer has the core (4 per worker left them waiting on it; a report is small).
        let queue = WorkQueue(next: next, window: workers * 64)
        cancellation.onCancel { queue.cancel() }
        startWorker(0, of: workers, queue: queue)
        var failure: Error?
        while let report = queue.nextInOrder() {
            summary.count(report.status)
            do {
                try onItem(report)
            } catch {
                failure = error
                queue.cancel()
                break
            }
        }
        queue.waitForWorkers()
        return failure
    }

    /// Starts worker `number`; it starts the next one when it takes its first file, so threads are only made for
    /// files that exist (a concurrency of 1,000 over 12 files makes 13 threads, not 1,000).
    private func startWorker(_ number: Int, of workers: Int, queue: WorkQueue) {
        queue.workerStarted()
        let thread = Thread { [self] in
            var first = true
            while let (index, entry) = queue.take() {
                if first, number + 1 < workers { startWorker(number + 1, of: workers, queue: queue) }
                first = false
                queue.finish(index, report: self.processOrDefer(entry, id: index))
            }
        }
        thread.name = "ingest-worker-\(number)"
        thread.stackSize = 8 << 20
        thread.start()
    }

    /// Stops the run from any thread (a Ctrl-C handler): `run` returns once the files in flight have ended.
    public func cancel(reason: String) { cancellation.cancel(reason: reason) }

    private let deferredLock = NSLock()
    /// Files another worker held a lease on when this one came to them.
    private var deferred: [InputEntry] = []

    private func takeDeferred() -> [InputEntry] {
        deferredLock.withLock {
            defer { deferred.removeAll() }
            return deferred
        }
    }

    /// Runs the stages on one entry. Never throws: whatever goes wrong becomes this file's failure. A file another
    /// worker holds (a shared journal) is reported as skipped.
    public func process(_ entry: InputEntry, id: Int = 0) -> ItemReport {
        processOrDefer(entry, id: id, keepingDeferred: false)
            ?? ItemReport(
                path: entry.path, relativePath: entry.relativePath, status: .skipped,
                skipReason: "being worked on by another worker")
    }

    /// `process`, or nil when another worker holds the file's lease: `run` keeps such a file to ask for it again
    /// (`keepingDeferred`); `process`, which has no later pass, reports it as skipped instead.
    private func processOrDefer(_ entry: InputEntry, id: Int, keepingDeferred: Bool = true) -> ItemReport? {
        progress?.begin(id, path: entry.path)
        let report = runStages(entry, id: id)
        progress?.end(id, size: entry.size, failed: report?.status == .failed)
        if report == nil && keepingDeferred { deferredLock.withLock { deferred.append(entry) } }
        return report
    }

    /// A file the journal let through: what its row will say, the row's id once written, and the network stages
    /// it finished before (by position).
    private struct JournaledFile {
        var start: Journal.Start
        var id: Int64?
        var restored: [Int: JournalStage]
        /// Network stages an earlier run started and never finished (killed mid-call) or failed: their call may
        /// have reached the server, which can answer a repeat with 409.
        var cutShort: Set<Int> = []
    }

    private enum Preparation {
        case report(ItemReport)
        case run(JournaledFile?)
    }

    private let rootLock = NSLock()
    private var canonicalRoots: [String: (canonical: String, known: Bool)] = [:]

    /// `Journal.canonicalRoot`, and whether the journal has any file under it, worked out once per root rather
    /// than once per file.
    private func journalRoot(_ root: String) -> (canonical: String, known: Bool) {
        rootLock.withLock {
            if let known = canonicalRoots[root] { return known }
            let canonical = Journal.canonicalRoot(root)
            let answer = (canonical, (try? journal?.knows(root: canonical)) ?? true)
            canonicalRoots[root] = answer
            return answer
        }
    }

    private func runStages(_ entry: InputEntry, id: Int) -> ItemReport? {
        let (journalRoot, rootKnown) = journal == nil ? ("", false) : journalRoot(entry.root)
        if let problem = entry.problem {
            try? journal?.recordWithoutWork(
                root: journalRoot, relativePath: entry.relativePath, path: entry.path, pipeline: pipeline.name,
                configHash: pipeline.configHash, state: .failed, failures: [problem], reason: nil, duplicateOf: nil,
                templateValues: [:])
            return ItemReport(path: entry.path, relativePath: entry.relativePath, status: .failed, failures: [problem])
        }
        if let reason = entry.skipReason {
            return ItemReport(path: entry.path, relativePath: entry.relativePath, status: .skipped, skipReason: reason)
        }
        if let journal {
            // A shared journal hands each file to one worker at a time; a local one always says yes.
            let answer: JournalLease
            do {
                answer = try journal.lease(root: journalRoot, relativePath: entry.relativePath)
            } catch {
                return ItemReport(
                    path: entry.path, relativePath: entry.relativePath, status: .failed,
                    failures: [RuleFailure(stage: "journal", rule: "lease", message: "\(error)")])
            }
            switch answer {
            case .granted: break
            case .heldElsewhere: return nil
            case .handledElsewhere(let owner):
                return ItemReport(
                    path: entry.path, relativePath: entry.relativePath, status: .skipped,
                    skipReason: "finished by another worker (\(owner)); see its report")
            }
        }
        defer { journal?.endLease(root: journalRoot, relativePath: entry.relativePath) }
        let item = Item(
            path: entry.path, relativePath: entry.relativePath, size: entry.size, root: entry.root,
            rootIndex: entry.rootIndex)
        defer { removeTemporaryFiles(of: item) }
        func report(_ status: ItemStatus, _ failures: [RuleFailure] = [], skip: String? = nil) -> ItemReport {
            var report = ItemReport(
                path: entry.path, relativePath: entry.relativePath, status: status, failures: failures,
                skipReason: skip, facts: item.facts)
            report.timings = item.timings.json
            report.seconds = item.timings.seconds
            return report
        }

        var journaled: JournaledFile?
        if let journal {
            switch prepare(entry, item: item, journal: journal, root: journalRoot, rootKnown: rootKnown) {
            case .report(let early): return early
            case .run(let file): journaled = file
            }
        }
        /// Ends the file: journals how it ended (local records are batched), then reports it.
        func finish(_ status: ItemStatus, _ failures: [RuleFailure] = [], skip: String? = nil) -> ItemReport {
            guard let journal, var file = journaled else { return report(status, failures, skip: skip) }
            // The hash lets a touched or copied file be recognised next time; taken only where redoing a file costs
            // more than reading it once more (uploads, transcodes), unless a key or template already read it.
            if status == .passed && item.knownSHA256 == nil && hashesDoneFiles { _ = try? item.sha256() }
            file.start.sha256 = item.knownSHA256
            file.start.templateValues = item.templateValues
            let state: JournalState = status == .passed ? .done : status == .failed ? .failed : .skipped
            do {
                try journal.finish(
                    file.start, id: file.id, state: state, failures: failures, reason: skip, facts: item.facts)
            } catch {
                let failure = RuleFailure(
                    stage: "journal", rule: "write",
                    message: "the file's result could not be journaled (the next run redoes it): \(error)")
                return report(.failed, failures + [failure])
            }
            return report(status, failures, skip: skip)
        }

        var reserved: Int64 = 0
        if let workBudget {
            guard workBudget.reserve(entry.size) else {
                return finish(
                    .failed,
                    [
                        RuleFailure(
                            stage: "input", rule: "max_work_bytes",
                            message: "needs about \(ByteSize.format(entry.size)) of work space (its size), more than "
                                + "max_work_bytes allows", expected: "≤ \(ByteSize.format(workBudget.limit))",
                            actual: ByteSize.format(entry.size))
                    ])
            }
            reserved = entry.size
        }
        defer { if reserved > 0 { workBudget?.release(reserved) } }

        let progress = self.progress
        var reportBytes: (@Sendable (Int64, Int64?) -> Void)?
        if let progress {
            reportBytes = { @Sendable done, total in progress.bytes(id, done: done, total: total) }
        }
        /// A cancelled run's file: reported as failed, and left as it is in the journal (a network stage stays
        /// "started", the row "running"), exactly as after a kill, so the next run repeats what was cut short.
        func interrupted(_ stage: String, _ failures: [RuleFailure]) -> ItemReport {
            let failure =
                failures.first { $0.rule == "interrupted" }
                ?? ItemFailed.interrupted(stage: stage, reason: cancellation.reason, during: "stage \(stage)")
                .failures[0]
            return report(.failed, [failure])
        }
        for (position, configured) in stages.enumerated() {
            if cancellation.isCancelled { return interrupted(configured.name, []) }
            if let condition = configured.condition, !condition.matches(item) { continue }
            if let done = journaled?.restored[position],
                !Runner.mustRedo(done, nextIsDone: journaled?.restored[position + 1] != nil)
            {
                // Done before a crash or failure: its results are reused, the call (an upload …) is not repeated.
                for (key, value) in done.outputs.pairs {
                    // `result:NAME` is the answer as sent (signed URLs intact) for templates; the rest are facts.
                    if key.hasPrefix("result:") { item.templateValues[key] = value } else { item.facts[key] = value }
                }
                // A reused ticket may have expired since: an upload can still ask for a fresh one.
                (configured.stage as? RequestStage)?.registerRenewal(
                    item,
                    context: StageContext(
                        settings: settings, resultName: configured.resultName, progress: reportBytes,
                        position: position, cancellation: cancellation))
                journalRenewals(of: item, stage: configured, position: position, outputs: done.outputs) {
                    journaled?.id
                }
                continue
            }
            progress?.stage(id, configured.name)
            // Local stages need no record of their own: redoing them after a crash changes nothing outside.
            let network = configured.usesNetwork
            if let journal, var file = journaled, network {
                do {
                    if file.id == nil {
                        // The row, with the uuid and date the stage's templates will use, goes in with the barrier.
                        file.start.sha256 = item.knownSHA256
                        file.id = try journal.begin(file.start)
                        journaled = file
                    }
                    try journal.stageStarted(
                        fileID: file.id ?? 0, position: position, name: configured.name, barrier: true)
                } catch {
                    // Nothing is sent that the journal could not record as started.
                    return finish(
                        .failed,
                        [RuleFailure(stage: configured.name, rule: "journal", message: "not started: \(error)")])
                }
            }
            var context = StageContext(
                settings: settings, resultName: configured.resultName, progress: reportBytes, position: position,
                cancellation: cancellation)
            context.wantsContentHash = journal != nil
            context.mayHaveRunBefore = journaled?.cutShort.contains(position) ?? false
            context.logger?[metadataKey: "file"] = .string(entry.path)
            context.logger?[metadataKey: "stage"] = .string(configured.name)
            context.timings = item.timings
            let stageBegan = Date()
            let before = item.facts
            var outcome = StageOutcome.proceed
            var failures: [RuleFailure] = []
            do {
                outcome = try configured.stage.run(item, context: context)
            } catch let failed as ItemFailed {
                failures = failed.failures
            } catch {
                failures = [RuleFailure(stage: configured.name, rule: "error", message: "\(error)")]
            }
            item.timings.stage(configured.name, seconds: Date().timeIntervalSince(stageBegan))
            if !failures.isEmpty && cancellation.isCancelled { return interrupted(configured.name, failures) }
            if let journal, let file = journaled, network {
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
                let outputs = Runner.journaledOutputs(item, since: before, resultName: configured.resultName)
                do {
                    try journal.stageFinished(
                        fileID: file.id ?? 0, position: position, name: configured.name, status: status,
                        outputs: outputs, error: reason, barrier: true)
                    if status == .done {
                        journalRenewals(of: item, stage: configured, position: position, outputs: outputs) {
                            journaled?.id
                        }
                    }
                } catch {
                    let failure = RuleFailure(
                        stage: configured.name, rule: "journal",
                        message: "finished, but the journal could not record it (the next run repeats it): \(error)")
                    return finish(.failed, failures + [failure])
                }
            }
            if !failures.isEmpty { return finish(.failed, failures) }
            if case .skip(let reason) = outcome { return finish(.skipped, skip: reason) }
        }
        return finish(.passed)
    }

    /// Makes a renewal of this stage's answer (an upload whose signed URL expired asks for a new ticket) replace the
    /// journaled answer, committed before the upload that uses it starts: a run resumed after a crash between that
    /// upload and its callback must call back with the renewed ticket's ids, not the expired one's. `fileID` is read
    /// when the renewal happens (the row may be written only by a later stage).
    private func journalRenewals(
        of item: Item, stage configured: ConfiguredStage, position: Int, outputs: JSONObject,
        fileID: @escaping () -> Int64?
    ) {
        guard let journal, let resultName = configured.resultName, let renew = item.rerun[resultName] else { return }
        let name = configured.name
        item.rerun[resultName] = { [weak item] in
            let before = item?.facts ?? [:]
            let outcome = try renew()
            guard case .proceed = outcome, let item, let id = fileID() else { return outcome }
            var renewed = outputs
            for (key, value) in Runner.journaledOutputs(item, since: before, resultName: resultName).pairs {
                renewed[key] = value
            }
            do {
                try journal.stageFinished(
                    fileID: id, position: position, name: name, status: .done, outputs: renewed, error: nil,
                    barrier: true)
            } catch {
                // Nothing is sent with a ticket the journal could not record.
                throw ItemFailed(
                    stage: name, rule: "journal",
                    message: "the renewed '\(resultName)' could not be journaled (not used): \(error)")
            }
            return outcome
        }
    }

    /// The journal's say on a file before any stage runs: skip it (done with the same content and pipeline, a
    /// duplicate, not failed under `--retry-failed`) or run it, fixing its `uuid` and `date` and claiming its dedupe
    /// key first.
    private func prepare(
        _ entry: InputEntry, item: Item, journal: any JournalStore, root: String, rootKnown: Bool
    ) -> Preparation {
        func failed(_ failures: [RuleFailure]) -> Preparation {
            try? journal.recordWithoutWork(
                root: root, relativePath: entry.relativePath, path: entry.path, pipeline: pipeline.name,
                configHash: pipeline.configHash, state: .failed, failures: failures, reason: nil, duplicateOf: nil,
                templateValues: item.templateValues)
            return .report(
                ItemReport(path: entry.path, relativePath: entry.relativePath, status: .failed, failures: failures))
        }
        func skipped(_ reason: String, facts: JSONObject = [:]) -> Preparation {
            .report(
                ItemReport(
                    path: entry.path, relativePath: entry.relativePath, status: .skipped, skipReason: reason,
                    facts: facts))
        }
        let status: FileStatus
        do {
            // The walker's stat, taken a moment ago (one `stat` per file, not two).
            if let known = entry.status {
                status = known
            } else {
                status = try FileStatus(path: entry.path, followLinks: true)
            }
        } catch {
            return failed([RuleFailure(stage: "input", rule: "unreadable", message: "cannot open: \(error.reason)")])
        }
        do {
            let record = rootKnown ? try journal.record(root: root, relativePath: entry.relativePath) : nil
            var sameContent = false
            if let record, resume != .force, record.configHash == pipeline.configHash {
                if record.size == status.size && record.modified == status.modified && record.inode == status.inode {
                    sameContent = true
                    item.knownSHA256 = record.sha256
                } else if record.size == status.size, let known = record.sha256 {
                    // Touched or copied: the content decides.
                    sameContent = try item.sha256() == known
                    if sameContent && record.state == .done {
                        try journal.refreshIdentity(
                            fileID: record.id, size: status.size, modified: status.modified, inode: status.inode)
                    }
                }
                if sameContent && record.state == .done {
                    return skipped(JournalReason.alreadyDone, facts: record.facts)
                }
                if sameContent && record.state == .skipped && record.duplicateOf == nil {
                    return skipped(JournalReason.alreadyDone + ": " + (record.reason ?? "skipped"), facts: record.facts)
                }
            }
            if resume == .retryFailed {
                guard let record, record.state == .failed || record.state == .running else {
                    return skipped(
                        record == nil
                            ? "not in the journal as failed (--retry-failed)"
                            : "not failed before (--retry-failed)")
                }
            }
            let resuming =
                sameContent && resume != .force && (record?.state == .running || record?.state == .failed)
            // The remote name a re-run must reuse is decided here and journaled by `begin`, before any stage.
            if let record {
                for key in ["uuid", "date"] { item.templateValues[key] = record.templateValues[key] }
            }
            if fixesNamesFirst {
                _ = JournalTemplate.uuid(of: item)
                _ = JournalTemplate.date(of: item)
            }
            let key = try pipeline.dedupe?.render(for: item, settings: settings)
            if let key,
                let holder = try journal.claim(
                    key: key, root: root, relativePath: entry.relativePath, path: entry.path, excluding: record?.id)
            {
                let reason = "duplicate of \(holder) (dedupe key '\(key)')"
                try journal.recordWithoutWork(
                    root: root, relativePath: entry.relativePath, path: entry.path, pipeline: pipeline.name,
                    configHash: pipeline.configHash, state: .skipped, failures: [], reason: reason, duplicateOf: holder,
                    templateValues: item.templateValues)
                return skipped(reason)
            }
            let start = Journal.Start(
                root: root, relativePath: entry.relativePath, path: entry.path, size: status.size,
                modified: status.modified, inode: status.inode, sha256: item.knownSHA256, pipeline: pipeline.name,
                configHash: pipeline.configHash, templateValues: item.templateValues, dedupeKey: key,
                keepStages: resuming, existingID: record?.id)
            var restored: [Int: JournalStage] = [:]
            var cutShort: Set<Int> = []
            if resuming, let record {
                for stage in try journal.stages(fileID: record.id) {
                    guard stage.position < stages.count, stages[stage.position].name == stage.name,
                        stages[stage.position].usesNetwork
                    else { continue }
                    switch stage.status {
                    case .done: restored[stage.position] = stage
                    case .started, .failed: cutShort.insert(stage.position)
                    case .skipped: break
                    }
                }
            }
            return .run(JournaledFile(start: start, id: nil, restored: restored, cutShort: cutShort))
        } catch let failure as ItemFailed {
            return failed(failure.failures)
        } catch {
            return .report(
                ItemReport(
                    path: entry.path, relativePath: entry.relativePath, status: .failed,
                    failures: [RuleFailure(stage: "journal", rule: "error", message: "\(error)")]))
        }
    }

    /// Temp files and a transcoded artifact in the work folder belong to the file alone: removed once it is finished.
    private func removeTemporaryFiles(of item: Item) {
        for path in item.temporaryFiles { try? FileSystem.remove(path) }
        if item.artifact != item.path, WorkFolder.contains(item.artifact, folder: settings.workDirectory) {
            try? FileSystem.remove(item.artifact)
        }
    }
}

/// Skip reasons the journal gives.
public enum JournalReason {
    public static let alreadyDone = "already done (journal)"
}

extension JSONObject {
    /// The pairs that are new or changed compared with `earlier`: what one stage added to an item's facts.
    func added(since earlier: JSONObject) -> JSONObject {
        var out = JSONObject()
        for (key, value) in pairs where earlier[key] != value { out[key] = value }
        return out
    }
}

/// The hand-off between the walker, the workers and the caller. One lock; a wake-up goes only to a thread that is
/// waiting for what just changed (the caller for the report it needs next, a worker for room in the window). With
/// more threads than cores (the journal's writer is one more), waking every thread on every report made them fight
/// over the lock and cost more than the work itself.
private final class WorkQueue: @unchecked Sendable {
    private let lock = NSLock()
    /// The caller waits here for the report of `nextToEmit`.
    private let reportReady = NSCondition()
    /// Workers wait here while the window is full.
    private let roomInWindow = NSCondition()
    private let next: () -> InputEntry?
    private let window: Int
    private var nextIndex = 0
    private var nextToEmit = 0
    private var walkerDone = false
    private var cancelled = false
    /// nil: the file was deferred (another worker holds it) and has no report in this pass.
    private var finished: [Int: ItemReport?] = [:]
    private var exitedWorkers = 0
    private var startedWorkers = 0
    private var callerWaiting = false
    private var workersWaiting = 0

    init(next: @escaping () -> InputEntry?, window: Int) {
        self.next = next
        self.window = window
    }

    /// The next entry for a worker, or nil when there is no more work. Waits while the window is full.
    func take() -> (Int, InputEntry)? {
        roomInWindow.lock()
        while true {
            lock.lock()
            let full = !cancelled && !walkerDone && nextIndex - nextToEmit >= window
            if full { workersWaiting += 1 }
            lock.unlock()
            guard full else { break }
            roomInWindow.wait()
        }
        roomInWindow.unlock()
        // The walker reads directories: under a lock of its own, so reports are not held up meanwhile.
        walking.lock()
        defer { walking.unlock() }
        lock.lock()
        let stop = cancelled || walkerDone
        lock.unlock()
        if !stop, let entry = next() {
            lock.lock()
            let index = nextIndex
            nextIndex += 1
            lock.unlock()
            return (index, entry)
        }
        lock.lock()
        walkerDone = true
        exitedWorkers += 1
        lock.unlock()
        wakeCaller(always: true)
        wakeWorkers()
        return nil
    }

    /// Held while the walker is asked for the next entry, so indices follow the walk's order.
    private let walking = NSLock()

    func finish(_ index: Int, report: ItemReport?) {
        lock.lock()
        finished[index] = report
        let wanted = index == nextToEmit
        lock.unlock()
        if wanted { wakeCaller(always: false) }
    }

    private func wakeCaller(always: Bool) {
        reportReady.lock()
        if always || callerWaiting { reportReady.signal() }
        reportReady.unlock()
    }

    /// The report of the oldest entry, once it is done; nil after the last one.
    func nextInOrder() -> ItemReport? {
        reportReady.lock()
        defer { reportReady.unlock() }
        while true {
            lock.lock()
            if let report = finished.removeValue(forKey: nextToEmit) {
                nextToEmit += 1
                let waking = workersWaiting > 0
                workersWaiting = 0
                lock.unlock()
                if waking { wakeWorkers() }
                if let report { return report }
                continue
            }
            let end = (walkerDone || cancelled) && nextToEmit >= nextIndex
            callerWaiting = !end
            lock.unlock()
            if end { return nil }
            reportReady.wait()
            callerWaiting = false
        }
    }

    private func wakeWorkers() {
        roomInWindow.lock()
        roomInWindow.broadcast()
        roomInWindow.unlock()
    }

    func cancel() {
        lock.lock()
        cancelled = true
        lock.unlock()
        wakeWorkers()
        wakeCaller(always: true)
    }

    /// Counted before the thread starts, and by a worker that has not exited yet: once every started worker has
    /// exited, none is left to start another.
    func workerStarted() {
        lock.lock()
        startedWorkers += 1
        lock.unlock()
    }

    func waitForWorkers() {
        roomInWindow.lock()
        defer { roomInWindow.unlock() }
        while true {
            lock.lock()
            let done = exitedWorkers >= startedWorkers
            lock.unlock()
            if done { return }
            roomInWindow.wait()
        }
    }
}

extension Runner {
    /// A journal written without the raw answer (`result:NAME`) holds only the redacted facts: a ticket whose signed
    /// URL was redacted cannot be used again, so when the stage after it has not run yet, it is requested anew.
    static func mustRedo(_ stage: JournalStage, nextIsDone: Bool) -> Bool {
        guard !nextIsDone, !stage.outputs.keys.contains(where: { $0.hasPrefix("result:") }) else { return false }
        return JSONValue.object(stage.outputs).serialized().contains(Redaction.placeholder)
    }

    /// What the journal keeps of a finished stage: the facts it added (redacted, as reports show them) and, under
    /// `result:NAME`, the answer as sent, so a resumed file PUTs to the very URL it was given (the same key, not a
    /// second object). The journal is a local file beside the work folder; signed URLs in it expire.
    static func journaledOutputs(_ item: Item, since before: JSONObject, resultName: String?) -> JSONObject {
        var outputs = item.facts.added(since: before)
        if let resultName, let raw = item.templateValues["result:" + resultName] {
            outputs["result:" + resultName] = raw
        }
        return outputs
    }
}
