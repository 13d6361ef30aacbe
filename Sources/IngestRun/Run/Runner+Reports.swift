import Foundation
import IngestCore
import Synchronization

extension Runner {
    /// The reports of a run over `paths`, as an asynchronous sequence: the same run as `run(paths:onItem:)`, on a
    /// thread of its own, whose reports arrive in order as `for try await` reads them.
    ///
    /// The run starts when the loop does. At most `bufferLimit` reports wait for the loop: while that many wait,
    /// the run holds back (no new file starts), so memory stays bounded however many files there are and however
    /// slow the loop is. Leaving the loop early, or cancelling the task that reads it, cancels the run as
    /// `cancel(reason:)` does: no new file starts and the files in flight end as interrupted. The sequence ends
    /// with the error the blocking `run(paths:onItem:)` would throw.
    ///
    /// ```swift
    /// for try await report in runner.reports(for: ["/media/card"]) {
    ///     print(report.status.rawValue, report.relativePath)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - paths: Files and folders; folders are walked (hidden files and the pipeline's `exclude` left out).
    ///   - bufferLimit: How many reports may wait for the loop before the run holds back.
    /// - Returns: A sequence of one `ItemReport` per file; its `summary` gives the counts once the run has ended.
    public func reports(for paths: [String], bufferLimit: Int = 64) -> RunReports {
        RunReports(runner: self, paths: paths, bufferLimit: bufferLimit)
    }
}

/// The reports of one run, in the order of the files, as an asynchronous sequence (see
/// `Runner.reports(for:bufferLimit:)`). The run starts with the first loop over it, once; a second loop shares the
/// same reports, and leaving either one stops the run.
public struct RunReports: AsyncSequence, Sendable {
    let start: RunStart

    init(runner: Runner, paths: [String], bufferLimit: Int) {
        start = RunStart(runner: runner, paths: paths, bufferLimit: bufferLimit)
    }

    public func makeAsyncIterator() -> ReportIterator {
        let channel = start.channel()
        channel.attachReader()
        return ReportIterator(lifetime: IteratorLifetime(channel: channel))
    }

    /// How many files passed, failed and were skipped, once the run has ended; throws what the run threw
    /// (`CancellationError` when the loop left early or its task was cancelled). Asked while a loop reads the
    /// reports, it waits for that loop to take them all; asked without one, it runs the files and drops their
    /// reports.
    public var summary: RunSummary {
        get async throws { try await start.channel().summary() }
    }

    /// The buffer's peak and whether the run waits for room now; the tests of the bound read it.
    package var bufferState: (peak: Int, producerBlocked: Bool) { start.channel().bufferState }

    /// Reads the reports in order. (Its `Element`, `ItemReport`, and `Failure`, `any Error`, follow from `next()`.)
    public struct ReportIterator: AsyncIteratorProtocol {
        let lifetime: IteratorLifetime

        /// The next file's report, or nil once every file has been reported.
        public mutating func next() async throws -> ItemReport? {
            try await lifetime.channel.next()
        }
    }
}

/// Stops the run when the last copy of an iterator goes away before the run ended: a loop left by `break`,
/// `return` or a thrown error.
final class IteratorLifetime: Sendable {
    let channel: ReportChannel

    init(channel: ReportChannel) { self.channel = channel }

    deinit { channel.stop() }
}

/// Starts the run on a thread of its own the first time its channel is asked for.
final class RunStart: Sendable {
    private let runner: Runner
    private let paths: [String]
    private let bufferLimit: Int
    private let started = Mutex<ReportChannel?>(nil)

    init(runner: Runner, paths: [String], bufferLimit: Int) {
        self.runner = runner
        self.paths = paths
        self.bufferLimit = bufferLimit
    }

    func channel() -> ReportChannel {
        let (channel, isNew) = started.withLock { started in
            if let channel = started { return (channel, false) }
            let channel = ReportChannel(limit: bufferLimit) { [runner] in
                runner.cancel(reason: "the caller stopped reading the reports")
            }
            started = channel
            return (channel, true)
        }
        if isNew { launch(channel) }
        return channel
    }

    /// The blocking run, on a thread of its own (its stages block in C libraries and must not hold a thread of
    /// Swift's cooperative pool).
    private func launch(_ channel: ReportChannel) {
        let thread = Thread { [runner, paths] in
            let result = Result { try runner.run(paths: paths) { try channel.send($0) } }
            channel.finish(result)
        }
        thread.name = "ingest-run"
        thread.stackSize = 8 << 20
        thread.start()
    }
}
