import Foundation
import IngestConfig
import IngestCore
import IngestFiles
import IngestJournal
import IngestStages
import Logging
import NativeCurl
import NativeSystem
import Synchronization

/// Runs a pipeline over files: a walker lists them lazily, a fixed number of worker threads (the pipeline's
/// `concurrency`) run the stages — on threads of their own, because stages block in C libraries and must not
/// starve Swift's cooperative pool — and results are handed back on the caller's thread in the walker's order,
/// whatever order they finished in. Workers never run further ahead of the oldest unfinished file than a small
/// window, so memory stays bounded on a tree of any size.
///
/// With a journal, files already done are skipped, a stage that uses the network is journaled as started before
/// it runs and as done (with its results) right after, and a file resumed after a crash reuses those results
/// instead of repeating the call.
public final class Runner: Sendable {
    package let pipeline: Pipeline
    /// `workDirectory` is the run's own folder inside the work folder while `run` goes on.
    package internal(set) var settings: RunSettings {
        get { currentSettings.withLock { $0 } }
        set { currentSettings.withLock { $0 = newValue } }
    }
    private let currentSettings: Mutex<RunSettings>
    /// The stages that run: all of them, or only the local ones for `ingest validate`.
    package let stages: [ConfiguredStage]

    /// Counters for a live display; nil when nothing shows progress.
    package let progress: RunProgress?
    /// Where progress of the batch is kept; nil for `--no-journal` and `ingest validate`. The runner talks to it
    /// through `session` and each file's `JournaledFile`.
    package let journal: (any JournalStore)?
    /// Counters `--metrics-addr` serves (`Metrics/`); nil counts nothing.
    package let metrics: RunMetrics?
    package let resume: ResumePolicy
    /// Set by `cancel(reason:)`: no new file starts, transfers in flight are cancelled, their files end as
    /// interrupted (reported as failed, left unfinished in the journal for the next run).
    package let cancellation: RunCancellation
    /// The part of the tree this run takes (`--shard I/N`); nil for all of it.
    package let shard: Shard?
    /// `max_work_bytes`, when the pipeline transcodes.
    let workBudget: WorkBudget?
    /// True when the pipeline uploads or transcodes: done files are hashed for the journal's content check.
    let hashesDoneFiles: Bool
    /// All the run's talk with the journal but what one file's stages journal (`JournaledFile`).
    let session: JournalSession?
    /// `on_success` / `on_failure`, applied to each file's final report (`Disposal/`); nil when the pipeline has none.
    let disposer: Disposer?

    package init(
        pipeline: Pipeline, settings: RunSettings, progress: RunProgress? = nil, journal: (any JournalStore)? = nil,
        resume: ResumePolicy = .resume, shard: Shard? = nil, metrics: RunMetrics? = nil
    ) {
        self.pipeline = pipeline
        self.metrics = metrics
        self.currentSettings = Mutex(settings)
        self.progress = progress
        self.journal = journal
        self.resume = resume
        self.shard = shard
        // The cap refills in real time (`SystemClock`), not on the run's clock: the transfers it paces wait for it in
        // curl's poll, which no test clock moves.
        cancellation = RunCancellation(
            sendLimiter: pipeline.bandwidth.flatMap { $0.isOff ? nil : SendLimiter(schedule: $0.schedule) })
        let stages = pipeline.stages.filter { !(settings.offline && $0.usesNetwork) }
        self.stages = stages
        hashesDoneFiles = stages.contains { $0.usesNetwork || $0.writesWorkFiles }
        session = journal.map { JournalSession(store: $0, pipeline: pipeline, stages: stages, resume: resume) }
        // `ingest validate` (offline) runs the local stages only and changes nothing: no file is moved or deleted.
        disposer =
            pipeline.disposal.isEmpty || settings.offline
            ? nil : Disposer(disposal: pipeline.disposal, dryRun: settings.rehearsal != nil)
        if let limit = pipeline.maxWorkBytes, stages.contains(where: \.writesWorkFiles) {
            workBudget = WorkBudget(limit: limit)
        } else {
            workBudget = nil
        }
    }

    /// Walks `paths` and runs every file; `onItem` sees each report in order, on the calling thread. An error
    /// thrown by `onItem` (a report that cannot be written) stops the run after the files in flight and is
    /// rethrown.
    ///
    /// - Parameters:
    ///   - paths: Files and folders; folders are walked (hidden files and the pipeline's `exclude` left out).
    ///   - onItem: Called with each file's report, in order, on the calling thread.
    /// - Returns: How many files passed, failed and were skipped.
    /// - Throws: What `onItem` threw, or an error that stops the whole run (the work folder cannot be made).
    @discardableResult
    public func run(paths: [String], onItem: (ItemReport) throws -> Void) throws -> RunSummary {
        let ignored = ignoredPaths()
        try pipeline.disposal.check(inputs: paths)
        let runFolder = try claimRunFolder()
        defer { if let runFolder { releaseRunFolder(runFolder) } }
        try session?.recordPipelineName()
        let walker = InputWalker(paths: paths, spec: pipeline.input, ignoring: ignored, cancellation: cancellation)
        let shard = self.shard
        let metrics = self.metrics
        if let progress { startCountingTotal(paths: paths, ignoring: ignored, progress: progress) }
        var summary = RunSummary()
        var failure = drain(
            next: {
                while let entry = walker.next() {
                    if shard?.contains(relativePath: entry.relativePath) ?? true {
                        metrics?.listed()
                        return entry
                    }
                }
                return nil
            }, summary: &summary, onItem: onItem)
        // Files other workers held (a shared journal), waited for until they are finished or their lease expires —
        // asked again soon at first (most are small files another worker is finishing), then less and less often —
        // and files whose cut-short call may still be in flight, taken up again once it cannot be.
        var pause = 0.05
        while failure == nil, !cancellation.isCancelled, let session {
            guard let due = takeDue(pollInterval: min(pause, session.leasePollInterval)) else { break }
            pause *= 2
            var iterator = due.makeIterator()
            failure = drain(next: { iterator.next() }, summary: &summary, onItem: onItem)
        }
        return try finishRun(summary, failure: failure)
    }

    /// Ends a run (or a watch): the journal's last batch committed, then the first failure thrown, or the summary.
    func finishRun(_ summary: RunSummary, failure: Error?) throws -> RunSummary {
        var failure = failure
        if let session {
            do {
                try session.commit()
            } catch {
                failure = failure ?? error
            }
        }
        if let failure { throw failure }
        return summary
    }

    /// The total for the live display, counted by a second, cheap walk beside the work, so the first file starts at
    /// once.
    private func startCountingTotal(paths: [String], ignoring ignored: [String], progress: RunProgress) {
        let spec = pipeline.input
        let shard = self.shard
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

    /// Runs the entries `next` gives on the pipeline's worker threads, handing each report to `onItem` in order;
    /// returns the error `onItem` threw, if any (the run then stops after the files in flight). `ready`, when
    /// `next` blocks for new files (`watch`), gives only entries available now, so a batch never waits to fill.
    func drain(
        next: sending @escaping () -> InputEntry?, ready: sending (() -> InputEntry?)? = nil,
        summary: inout RunSummary, onItem: (ItemReport) throws -> Void
    ) -> Error? {
        let workers = min(max(1, pipeline.concurrency), Pipeline.maxConcurrency)
        // Reports wait here in path order. A roomy window keeps the workers going while the report writer or the
        // journal's writer has the core (4 per worker left them waiting on it; a report is small).
        // A shared journal is asked about the files a batch at a time, as the workers come to them.
        let queue: WorkQueue
        if let session {
            let leased = session.leasingAhead(next, ready: ready, workers: workers, clock: settings.clock)
            queue = WorkQueue(next: leased, window: workers * 64)
        } else {
            queue = WorkQueue(next: next, window: workers * 64)
        }
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

    /// What each file's run gets of this one.
    var fileRunPlan: FileRunPlan {
        FileRunPlan(
            stages: stages, settings: settings, progress: progress, cancellation: cancellation,
            workBudget: workBudget, hashesDoneFiles: hashesDoneFiles, journaled: journal != nil, journal: journal)
    }

    /// Stops the run from any thread (a Ctrl-C handler): `run` returns once the files in flight have ended.
    public func cancel(reason: String) { cancellation.cancel(reason: reason) }

    /// Files set aside: another worker held their lease (`until` nil: ask again after the poll interval), or a call
    /// an earlier run cut short may be in flight until `until`.
    private let deferred = Mutex<[(entry: InputEntry, until: Date?)]>([])

    /// Every file set aside, taken out (`watch` feeds them again itself once due).
    func takeDeferred() -> [(entry: InputEntry, until: Date?)] {
        deferred.withLock { deferred in
            defer { deferred.removeAll() }
            return deferred
        }
    }

    /// Waits (cancellably, no worker held) for the first set-aside file to be due; the files due then, or nil when
    /// none is set aside or the run was cancelled. The others stay set aside.
    private func takeDue(pollInterval: Double) -> [InputEntry]? {
        let waiting = deferred.withLock { $0 }
        guard !waiting.isEmpty else { return nil }
        let clock = settings.clock
        let first = waiting.map { $0.until?.timeIntervalSince(clock.date) ?? pollInterval }.min() ?? 0
        if first > 0, !clock.sleep(first, cancellation: cancellation) { return nil }
        let now = clock.date
        return deferred.withLock { deferred in
            let due = deferred.filter { ($0.until ?? now) <= now }.map(\.entry)
            deferred.removeAll { ($0.until ?? now) <= now }
            return due
        }
    }

    /// Runs the stages on one entry. Never throws: whatever goes wrong becomes this file's failure. A file another
    /// worker holds (a shared journal) is reported as skipped.
    /// A file whose cut-short call may still be in flight is waited for here (cancellably).
    package func process(_ entry: InputEntry, id: Int = 0) -> ItemReport {
        while true {
            switch handle(entry, id: id) {
            case .report(let report): return report
            case .later(let until?) where sleep(until: until): continue
            case .later:
                return ItemReport(
                    path: entry.path, relativePath: entry.relativePath, status: .skipped,
                    skipReason: cancellation.isCancelled
                        ? "not started: the run was stopped" : "being worked on by another worker")
            }
        }
    }

    /// Sleeps on the run's clock until `date` (its `date`); false when the run was cancelled.
    private func sleep(until date: Date) -> Bool {
        let clock = settings.clock
        return clock.sleep(date.timeIntervalSince(clock.date), cancellation: cancellation)
    }

    /// What a worker did with a file: its report, or set it aside for later (`until` nil: another worker holds
    /// its lease; else a call an earlier run cut short may be in flight until then).
    private enum Handling {
        case report(ItemReport)
        case later(until: Date?)
    }

    /// `handle`, keeping a file set aside for `run` to take up again (nil: no report in this pass).
    private func processOrDefer(_ entry: InputEntry, id: Int) -> ItemReport? {
        switch handle(entry, id: id) {
        case .report(let report): return report
        case .later(let until):
            deferred.withLock { $0.append((entry, until)) }
            return nil
        }
    }

    private func handle(_ entry: InputEntry, id: Int) -> Handling {
        progress?.begin(id, path: entry.path)
        var handling = runStages(entry, id: id)
        if case .report(let report) = handling {
            handling = .report(finished(report, entry: entry))
            progress?.end(id, size: entry.size, failed: report.status == .failed)
        } else {
            progress?.setAside(id)
        }
        return handling
    }

    /// Runs the stages on one entry once the journal lets it through, or sets it aside.
    private func runStages(_ entry: InputEntry, id: Int) -> Handling {
        let root = session?.root(of: entry.root) ?? .unjournaled
        if let problem = entry.problem {
            session?.recordFailed(entry, root: root, failures: [problem], templateValues: [:])
            return .report(ItemReport(entry, status: .failed, failures: [problem]))
        }
        if let reason = entry.skipReason { return .report(ItemReport(entry, status: .skipped, skipReason: reason)) }
        switch session?.lease(entry, root: root) {
        case .heldElsewhere?: return .later(until: nil)
        case .report(let report)?: return .report(report)
        case .granted?, nil: break
        }
        defer { session?.endLease(entry, root: root) }
        // The file's one record of where it is and what it was when listed, from here on: its item, its journal row
        // and its report read it (the walker's `stat`, or one taken now).
        let item = Item(file: entry.file.statted(), clock: settings.clock)
        defer { removeTemporaryFiles(of: item) }
        var journaled: JournaledFile?
        switch session?.prepare(entry, item: item, root: root, settings: settings) {
        case .report(let early)?: return .report(early)
        case .run(let file)?: journaled = file
        case .wait(let until, let why)?:
            let seconds = max(0, until.timeIntervalSince(settings.clock.date))
            settings.logger?.info(
                "waits \(String(format: "%.1f", seconds)) s: \(why); other files go on meanwhile",
                metadata: [
                    "file": .string(entry.path), "wait_seconds": .stringConvertible((seconds * 10).rounded() / 10),
                ])
            return .later(until: until)
        case nil: break
        }
        return .report(FileRun(plan: fileRunPlan, id: id, item: item, journaled: journaled).run())
    }

    /// Temp files and a transcoded artifact in the work folder belong to the file alone: removed once it is finished.
    private func removeTemporaryFiles(of item: Item) {
        for path in item.temporaryFiles { try? FileSystem.remove(path) }
        if item.artifact != item.path, WorkFolder.contains(item.artifact, folder: settings.workDirectory) {
            try? FileSystem.remove(item.artifact)
        }
    }
}
