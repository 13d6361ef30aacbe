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
        object["facts"] = .object(facts)
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

/// Runs a pipeline over files: a walker lists them lazily, a fixed number of worker threads (the pipeline's
/// `concurrency`) run the stages — on threads of their own, because stages block in C libraries and must not
/// starve Swift's cooperative pool — and results are handed back on the caller's thread in the walker's order,
/// whatever order they finished in. Workers never run further ahead of the oldest unfinished file than a small
/// window, so memory stays bounded on a tree of any size.
public final class Runner: @unchecked Sendable {
    public let pipeline: Pipeline
    public let settings: RunSettings
    /// The stages that run: all of them, or only the local ones for `ingest validate`.
    public let stages: [ConfiguredStage]

    /// Counters for a live display; nil when nothing shows progress.
    public let progress: RunProgress?

    public init(pipeline: Pipeline, settings: RunSettings, progress: RunProgress? = nil) {
        self.pipeline = pipeline
        self.settings = settings
        self.progress = progress
        stages = pipeline.stages.filter { !(settings.offline && $0.usesNetwork) }
    }

    /// Walks `paths` and runs every file; `onItem` sees each report in order, on the calling thread. An error
    /// thrown by `onItem` (a report that cannot be written) stops the run after the files in flight and is
    /// rethrown.
    @discardableResult
    public func run(paths: [String], onItem: (ItemReport) throws -> Void) throws -> RunSummary {
        let walker = InputWalker(paths: paths, spec: pipeline.input)
        if let progress {
            // The total is counted by a second, cheap walk beside the work, so the first file starts at once.
            let spec = pipeline.input
            let counter = Thread {
                var total = 0
                for _ in InputWalker(paths: paths, spec: spec) { total += 1 }
                progress.setTotal(total)
            }
            counter.name = "ingest-count"
            counter.start()
        }
        let workers = max(1, pipeline.concurrency)
        let queue = WorkQueue(walker: walker, window: workers * 4)
        var threads: [Thread] = []
        for number in 0..<workers {
            let thread = Thread { [self] in
                while let (index, entry) = queue.take() {
                    queue.finish(index, report: self.process(entry, id: index))
                }
            }
            thread.name = "ingest-worker-\(number)"
            thread.stackSize = 8 << 20
            threads.append(thread)
            thread.start()
        }
        var summary = RunSummary()
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
        queue.waitForWorkers(count: workers)
        if let failure { throw failure }
        return summary
    }

    /// Runs the stages on one entry. Never throws: whatever goes wrong becomes this file's failure.
    public func process(_ entry: InputEntry, id: Int = 0) -> ItemReport {
        progress?.begin(id, path: entry.path)
        let report = runStages(entry, id: id)
        progress?.end(id, size: entry.size, failed: report.status == .failed)
        return report
    }

    private func runStages(_ entry: InputEntry, id: Int) -> ItemReport {
        if let problem = entry.problem {
            return ItemReport(path: entry.path, relativePath: entry.relativePath, status: .failed, failures: [problem])
        }
        let item = Item(path: entry.path, relativePath: entry.relativePath, size: entry.size)
        defer { removeTemporaryFiles(of: item) }
        func report(_ status: ItemStatus, _ failures: [RuleFailure] = [], skip: String? = nil) -> ItemReport {
            ItemReport(
                path: entry.path, relativePath: entry.relativePath, status: status, failures: failures,
                skipReason: skip, facts: item.facts)
        }
        let progress = self.progress
        var reportBytes: (@Sendable (Int64, Int64?) -> Void)?
        if let progress {
            reportBytes = { @Sendable done, total in progress.bytes(id, done: done, total: total) }
        }
        for configured in stages {
            progress?.stage(id, configured.name)
            let context = StageContext(
                settings: settings, resultName: configured.resultName, progress: reportBytes)
            do {
                switch try configured.stage.run(item, context: context) {
                case .proceed: continue
                case .skip(let reason): return report(.skipped, skip: reason)
                }
            } catch let failed as ItemFailed {
                return report(.failed, failed.failures)
            } catch {
                let failure = RuleFailure(stage: configured.name, rule: "error", message: "\(error)")
                return report(.failed, [failure])
            }
        }
        return report(.passed)
    }

    private func removeTemporaryFiles(of item: Item) {
        for path in item.temporaryFiles { unlink(path) }
    }
}

/// The hand-off between the walker, the workers and the caller: one lock, one condition.
private final class WorkQueue: @unchecked Sendable {
    private let condition = NSCondition()
    private let walker: InputWalker
    private let window: Int
    private var nextIndex = 0
    private var nextToEmit = 0
    private var walkerDone = false
    private var cancelled = false
    private var finished: [Int: ItemReport] = [:]
    private var exitedWorkers = 0

    init(walker: InputWalker, window: Int) {
        self.walker = walker
        self.window = window
    }

    /// The next entry for a worker, or nil when there is no more work. Waits while the window is full.
    func take() -> (Int, InputEntry)? {
        condition.lock()
        defer { condition.unlock() }
        while !cancelled && !walkerDone && nextIndex - nextToEmit >= window { condition.wait() }
        guard !cancelled, !walkerDone, let entry = walker.next() else {
            walkerDone = true
            exitedWorkers += 1
            condition.broadcast()
            return nil
        }
        defer { nextIndex += 1 }
        return (nextIndex, entry)
    }

    func finish(_ index: Int, report: ItemReport) {
        condition.lock()
        finished[index] = report
        condition.broadcast()
        condition.unlock()
    }

    /// The report of the oldest entry, once it is done; nil after the last one.
    func nextInOrder() -> ItemReport? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let report = finished.removeValue(forKey: nextToEmit) {
                nextToEmit += 1
                condition.broadcast()
                return report
            }
            if (walkerDone || cancelled) && nextToEmit >= nextIndex { return nil }
            condition.wait()
        }
    }

    func cancel() {
        condition.lock()
        cancelled = true
        condition.broadcast()
        condition.unlock()
    }

    func waitForWorkers(count: Int) {
        condition.lock()
        while exitedWorkers < count { condition.wait() }
        condition.unlock()
    }
}
