import Foundation
import Testing

@testable import IngestConfig
@testable import IngestCore
@testable import IngestJournal
@testable import IngestRun
@testable import IngestTestSupport

/// `Runner.reports(for:)`: the blocking run as an async sequence, with back-pressure and cancellation.
@Suite struct AsyncReportsTests {
    /// `count` small files (`f00001.txt` …; every seventh too large for the pipeline's `max_bytes`), and a pipeline
    /// that validates them one at a time.
    func batch(_ count: Int, in folder: TemporaryFolder) throws -> Pipeline {
        for index in 0..<count {
            try folder.file(String(format: "in/f%05d.txt", index), index % 7 == 0 ? "more than ten bytes" : "small")
        }
        return try Pipeline.parse(
            yaml: "version: 1\nname: sizes\nconcurrency: 1\nstages:\n  - validate:\n      max_bytes: 10\n",
            source: "sizes.yml")
    }

    func settings(_ folder: TemporaryFolder) -> RunSettings { RunSettings(workDirectory: folder.path + "/work") }

    @Test func everyFileIsReportedInOrderAsTheBlockingCallReportsIt() async throws {
        let folder = try TemporaryFolder("async-reports")
        defer { folder.remove() }
        let pipeline = try batch(150, in: folder)
        var blocking: [String] = []
        let blockingSummary = try Runner(pipeline: pipeline, settings: settings(folder)).run(paths: [
            folder.path + "/in"
        ]) {
            blocking.append("\($0.status.rawValue) \($0.relativePath)")
        }
        let reports = Runner(pipeline: pipeline, settings: settings(folder)).reports(
            for: [folder.path + "/in"], bufferLimit: 8)
        var streamed: [String] = []
        for try await report in reports { streamed.append("\(report.status.rawValue) \(report.relativePath)") }
        #expect(streamed.count == 150)
        #expect(streamed == blocking)
        let summary = try await reports.summary
        #expect(summary == blockingSummary && summary.failed == 22 && summary.passed == 128)
        #expect(reports.bufferState.peak <= 8)
    }

    /// `summary` alone runs every file (the reports are dropped, not held for a loop); asked while a loop reads,
    /// it leaves every report to the loop.
    @Test func summaryWithOrWithoutALoop() async throws {
        let folder = try TemporaryFolder("async-summary")
        defer { folder.remove() }
        let pipeline = try batch(100, in: folder)
        let alone = try await Runner(pipeline: pipeline, settings: settings(folder)).reports(
            for: [folder.path + "/in"], bufferLimit: 2
        ).summary
        #expect(alone.passed + alone.failed == 100)
        let reports = Runner(pipeline: pipeline, settings: settings(folder)).reports(
            for: [folder.path + "/in"], bufferLimit: 2)
        var iterator = reports.makeAsyncIterator()
        let first = try await iterator.next()
        async let summary = reports.summary
        var count = first == nil ? 0 : 1
        while try await iterator.next() != nil { count += 1 }
        #expect(count == 100)
        #expect(try await summary == alone)
    }

    /// A consumer slower than the workers holds the run back: the run's thread waits once `bufferLimit` reports
    /// wait, and the workers stop a window ahead of it, however many files remain.
    @Test func aSlowLoopHoldsTheRunBack() async throws {
        let folder = try TemporaryFolder("async-bound")
        defer { folder.remove() }
        let pipeline = try batch(600, in: folder)
        let progress = RunProgress()
        let runner = Runner(pipeline: pipeline, settings: settings(folder), progress: progress)
        let reports = runner.reports(for: [folder.path + "/in"], bufferLimit: 4)
        var iterator = reports.makeAsyncIterator()
        #expect(try await iterator.next()?.relativePath == "f00000.txt")
        // Bounded: 600 files at well under a millisecond each would all be done in this wait without the hold.
        var waits = 0
        while !reports.bufferState.producerBlocked && waits < 2000 {
            try await Task.sleep(nanoseconds: 5_000_000)
            waits += 1
        }
        #expect(reports.bufferState.producerBlocked, "the run never waited for the loop")
        // The report the run holds, the 4 waiting, one window of reports (64 a worker) and one file in a worker.
        let finished = progress.snapshot().filesDone
        #expect(finished <= 1 + 1 + 4 + 64 + 1, "\(finished) files finished ahead of a loop that read 1")
        #expect(reports.bufferState.peak == 4)
        var count = 1
        while try await iterator.next() != nil { count += 1 }
        #expect(count == 600)
    }

    /// Leaving the loop cancels the run: files not started stay unstarted (no journal row), those it finished are
    /// done in the journal, and the next run does the rest.
    @Test func leavingTheLoopStopsTheRunAndTheJournalResumes() async throws {
        let folder = try TemporaryFolder("async-break")
        defer { folder.remove() }
        let pipeline = try batch(400, in: folder)
        let journal = try SQLiteJournal(path: folder.path + "/journal.sqlite")
        let runner = Runner(pipeline: pipeline, settings: settings(folder), journal: journal)
        let reports = runner.reports(for: [folder.path + "/in"], bufferLimit: 2)
        var seen = 0
        for try await _ in reports {
            seen += 1
            if seen == 3 { break }
        }
        await #expect(throws: CancellationError.self) { try await reports.summary }
        #expect(runner.cancellation.isCancelled)
        let counts = try journal.counts()
        let journaled = counts.values.reduce(0, +)
        #expect(journaled >= 3 && journaled < 400, "\(counts)")
        #expect(counts[.running] == nil, "\(counts)")
        // A second run finishes the batch: what the first did is skipped, the rest is run, nothing twice.
        let second = try Runner(pipeline: pipeline, settings: settings(folder), journal: journal).run(paths: [
            folder.path + "/in"
        ]) { _ in }
        // Files that failed (the large ones, and any the cancellation interrupted) are run again.
        #expect(second.skipped == counts[.done] ?? 0, "\(second) after \(counts)")
        #expect(second.passed + second.failed + second.skipped == 400)
        #expect(try journal.counts().values.reduce(0, +) == 400)
    }

    /// Cancelling the task that reads the reports cancels the run, and the loop throws `CancellationError`.
    @Test func cancellingTheTaskStopsTheRun() async throws {
        let folder = try TemporaryFolder("async-cancel")
        defer { folder.remove() }
        let pipeline = try batch(400, in: folder)
        let progress = RunProgress()
        let runner = Runner(pipeline: pipeline, settings: settings(folder), progress: progress)
        let reports = runner.reports(for: [folder.path + "/in"], bufferLimit: 2)
        let (firstReport, reported) = AsyncStream.makeStream(of: Void.self)
        let reader = Task {
            var count = 0
            for try await _ in reports {
                count += 1
                reported.yield()
                // Waits here, as a consumer busy with a report does, until the task is cancelled.
                try await Task.sleep(nanoseconds: 60_000_000_000)
            }
            return count
        }
        for await _ in firstReport { break }
        reader.cancel()
        await #expect(throws: CancellationError.self) { try await reader.value }
        await #expect(throws: CancellationError.self) { try await reports.summary }
        #expect(runner.cancellation.isCancelled)
        let finished = progress.snapshot().filesDone
        #expect(finished < 400, "the run went on to the end")
    }

    /// Where `run(paths:onItem:)` throws, the loop throws the same error.
    @Test func theSequenceEndsWithTheRunsError() async throws {
        let folder = try TemporaryFolder("async-error")
        defer { folder.remove() }
        _ = try batch(3, in: folder)
        // Failed files would be moved into the input folder, to be taken again: the run refuses to start.
        let pipeline = try Pipeline.parse(
            yaml: """
                version: 1
                name: sizes
                on_failure: { move_to: \(folder.path)/in/failed }
                stages:
                  - validate: { max_bytes: 10 }
                """, source: "sizes.yml")
        var blockingError = ""
        do {
            try Runner(pipeline: pipeline, settings: settings(folder)).run(paths: [folder.path + "/in"]) { _ in }
        } catch {
            blockingError = "\(error)"
        }
        #expect(blockingError.contains("move_to"), "\(blockingError)")
        var streamedError = ""
        var count = 0
        do {
            let reports = Runner(pipeline: pipeline, settings: settings(folder)).reports(for: [folder.path + "/in"])
            for try await _ in reports {
                count += 1
            }
        } catch {
            streamedError = "\(error)"
        }
        #expect(count == 0)
        #expect(streamedError == blockingError)
    }
}
