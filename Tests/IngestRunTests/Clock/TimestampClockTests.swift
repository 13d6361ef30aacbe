import Foundation
import Logging
import Synchronization
import Testing

@testable import IngestCore
@testable import IngestRun
@testable import IngestTestSupport

/// Issue 32 §6, the times a run states rather than waits for: a JSON log line's `time`, the metrics' last success,
/// the progress line's elapsed time and its ticks. Each is read on the clock it is given (the run's:
/// `RunSettings.clock`), so a test on a `ManualClock` dated 2027 sees 2027, not today.
/// (`scripts/check-clock.py`, run by `make test`, keeps any other read of the real clock out of `Sources/`.)
@Suite struct TimestampClockTests {
    /// 2027-01-15 08:00:00 UTC: far from any day this test could run on.
    static let date = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func aJSONLogLineIsTimedByTheRunsClock() {
        let clock = ManualClock(date: Self.date)
        let lines = Mutex<[String]>([])
        let handler = RunLogHandler(format: .json, level: .info, clock: clock) { line in
            lines.withLock { $0.append(line) }
        }
        clock.advance(by: 1.5)
        Logger(label: "test") { _ in handler }.info("hello")
        let line = lines.withLock { $0.first } ?? ""
        #expect(line.contains(#""time":"2027-01-15T08:00:01.500Z""#), "\(line)")
    }

    @Test func theLastSuccessIsTimedByTheRunsClock() {
        let clock = ManualClock(date: Self.date)
        let metrics = RunMetrics(clock: clock)
        clock.advance(by: 30)
        metrics.record(
            ItemReport(path: "/in/a.txt", relativePath: "a.txt", status: .passed, failures: [], facts: [:]))
        let line = metrics.text().split(separator: "\n").first { $0.hasPrefix("ingest_last_success_timestamp") }
        #expect(line.map { Double($0.split(separator: " ").last ?? "") } == 1_800_000_030.0, "\(line ?? "none")")
    }

    @Test func progressElapsedTimeIsReadOnTheRunsClock() {
        let clock = ManualClock(date: Self.date)
        let progress = RunProgress(clock: clock)
        #expect(progress.snapshot().elapsed == 0)
        clock.advance(by: 125)
        #expect(progress.snapshot().elapsed == 125)
    }

    /// The drawing thread sleeps on the run's clock: nothing is drawn until the clock has moved a whole tick (5 s
    /// where standard error is not a terminal), then one status line, whose rate is per second of that clock.
    @Test func theProgressLineTicksOnTheRunsClock() {
        let clock = DrivenClock(date: Self.date)
        let progress = RunProgress(clock: clock)
        let written = Mutex<[String]>([])
        let display = ProgressDisplay(progress: progress, environment: ["CI": "true"], clock: clock) { bytes in
            written.withLock { $0.append(String(decoding: bytes, as: UTF8.self)) }
        }
        progress.setTotal(2)
        progress.begin(0, path: "a.bin")
        progress.end(0, size: 10 << 20, failed: false)
        display.start()
        defer { display.stop() }
        #expect(clock.waitForSleep(after: 0))
        clock.advance(by: 4)
        #expect(written.withLock { $0.isEmpty }, "drawn before its tick: \(written.withLock { $0 })")
        let sleeps = clock.sleepsBegun
        clock.advance(by: 1)
        #expect(clock.waitForSleep(after: sleeps))
        let lines = written.withLock { $0 }
        #expect(lines.count == 1, "\(lines)")
        #expect(lines.first?.hasPrefix("1/2 files · 10 MiB · 2 MiB/s") == true, "\(lines)")
    }
}
