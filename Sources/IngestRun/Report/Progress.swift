import Foundation
import IngestCore
import NativeSystem
import Synchronization

/// Live counters of a run, updated by the runner (files) and by stages that move bytes (uploads, transcodes), and
/// read by a display. Thread-safe: workers update it concurrently.
package final class RunProgress: Sendable {
    /// One file being worked on.
    package struct Active: Sendable, Equatable {
        package var path: String
        package var stage: String
        package var bytesDone: Int64
        package var bytesTotal: Int64?
        /// What a waiting stage last said (`processing 40%`).
        package var note: String? = nil
    }

    package struct Snapshot: Sendable {
        package var filesDone: Int
        package var filesFailed: Int
        /// Nil until the count of inputs is known.
        package var filesTotal: Int?
        /// Bytes of finished files plus bytes moved so far by active ones.
        package var bytesDone: Int64
        package var active: [Active]
        package var elapsed: Double
    }

    private struct Counts {
        package var filesDone = 0
        package var filesFailed = 0
        package var filesTotal: Int?
        var finishedBytes: Int64 = 0
        package var active: [Int: Active] = [:]
    }
    /// The run's clock, which the elapsed time (and so the rate and the ETA) is read on.
    private let clock: any WaitClock
    private let started: Double
    private let counts = Mutex(Counts())

    package init(clock: any WaitClock = SystemClock()) {
        self.clock = clock
        started = clock.now
    }

    func setTotal(_ total: Int) { counts.withLock { $0.filesTotal = total } }

    func begin(_ id: Int, path: String) {
        counts.withLock { $0.active[id] = Active(path: path, stage: "", bytesDone: 0, bytesTotal: nil) }
    }

    func stage(_ id: Int, _ name: String) {
        counts.withLock {
            $0.active[id]?.stage = name
            $0.active[id]?.bytesDone = 0
            $0.active[id]?.bytesTotal = nil
            $0.active[id]?.note = nil
        }
    }

    /// A waiting stage says where its job stands (`processing 40%`).
    package func note(_ id: Int, _ text: String) { counts.withLock { $0.active[id]?.note = text } }

    /// A stage moving bytes reports how far it got (e.g. from curl's progress callback).
    package func bytes(_ id: Int, done: Int64, total: Int64?) {
        counts.withLock {
            $0.active[id]?.bytesDone = done
            $0.active[id]?.bytesTotal = total
        }
    }

    /// A file set aside for later (it comes back, and is counted, when it ends).
    func setAside(_ id: Int) { counts.withLock { $0.active[id] = nil } }

    func end(_ id: Int, size: Int64, failed: Bool) {
        counts.withLock {
            $0.active[id] = nil
            $0.filesDone += 1
            if failed { $0.filesFailed += 1 }
            $0.finishedBytes += size
        }
    }

    package func snapshot() -> Snapshot {
        let elapsed = clock.now - started
        return counts.withLock { counts in
            Snapshot(
                filesDone: counts.filesDone, filesFailed: counts.filesFailed, filesTotal: counts.filesTotal,
                bytesDone: counts.finishedBytes + counts.active.values.reduce(0) { $0 + $1.bytesDone },
                active: counts.active.keys.sorted().compactMap { counts.active[$0] },
                elapsed: elapsed)
        }
    }
}

/// Draws `RunProgress` on standard error: on a terminal, a status line plus a line per active file, redrawn in
/// place a few times a second; elsewhere (a pipe, or `CI=true`) a plain line every few seconds, so CI logs stay
/// readable. Standard output is left to the report.
package final class ProgressDisplay: Sendable {
    private let progress: RunProgress
    private let interactive: Bool
    private let interval: Double
    /// The run's clock, which the drawing thread sleeps on between ticks.
    private let clock: any WaitClock
    /// Where the lines go: standard error (tests keep them).
    private let write: @Sendable ([UInt8]) -> Void
    private struct Screen {
        var stopped = false
        var linesDrawn = 0
    }
    /// The drawing thread blocks on it between ticks, so `stop` ends it at once; report lines are printed under it.
    private let screen = ConditionLock(Screen())

    package init(
        progress: RunProgress, environment: [String: String] = ProcessInfo.processInfo.environment,
        clock: any WaitClock = SystemClock(),
        write: @escaping @Sendable ([UInt8]) -> Void = { CurrentProcess.writeToStandardError($0) }
    ) {
        self.progress = progress
        interactive =
            CurrentProcess.standardErrorIsTerminal && environment["CI"] != "true" && environment["TERM"] != "dumb"
        interval = interactive ? 0.25 : 5
        self.clock = clock
        self.write = write
    }

    /// True when drawing in place on a terminal; false for the plain lines of a pipe or CI.
    package var isInteractive: Bool { interactive }

    package func start() {
        let thread = Thread { [self] in
            // A tick on the run's clock, cut short by `stop`.
            while clock.sleep(interval, cancellation: Stopping(screen: screen)) {
                let stopped = screen.withLock { screen in
                    if !screen.stopped { draw(&screen) }
                    return screen.stopped
                }
                if stopped { return }
            }
        }
        thread.name = "ingest-progress"
        thread.start()
    }

    /// Stops drawing and clears the live lines (on a terminal) so the report that follows starts clean.
    package func stop() {
        screen.change { screen in
            screen.stopped = true
            if interactive { clear(&screen) }
        }
    }

    /// Runs `body` (which prints report lines or log events) with the live lines cleared, so the two never
    /// overwrite each other, then draws them again at once: left for the next tick, the status line would be gone
    /// most of the time in a batch whose results arrive faster than the ticks.
    package func withDisplayCleared<T>(_ body: () throws -> T) rethrows -> T {
        try screen.withLock { screen in
            if interactive { clear(&screen) }
            defer { if interactive && !screen.stopped { draw(&screen) } }
            return try body()
        }
    }

    private func draw(_ screen: inout Screen) {
        let snapshot = progress.snapshot()
        var lines = [Self.statusLine(snapshot)]
        if interactive {
            lines += snapshot.active.prefix(8).map(Self.activeLine)
            clear(&screen)
            let width = Int(ProcessInfo.processInfo.environment["COLUMNS"] ?? "") ?? 120
            let text = lines.map { String($0.prefix(max(20, width - 1))) }.joined(separator: "\n") + "\n"
            write(Array(text.utf8))
            screen.linesDrawn = lines.count
        } else {
            write(Array((lines[0] + "\n").utf8))
        }
    }

    /// What ends the drawing thread's sleep: `stop`.
    private struct Stopping: WaitInterruption {
        let screen: ConditionLock<Screen>
        var isCancelled: Bool { screen.withLock { $0.stopped } }
        func sleep(_ seconds: Double) -> Bool {
            screen.wait(until: \.stopped, timeout: seconds) { _, stopped in !stopped }
        }
    }

    private func clear(_ screen: inout Screen) {
        guard screen.linesDrawn > 0 else { return }
        let up = String(repeating: "\u{1B}[1A\u{1B}[2K", count: screen.linesDrawn)
        write(Array(up.utf8))
        screen.linesDrawn = 0
    }

    /// `  upload clip.mov  1.5 MiB / 3 MiB (50%)`; the path and stage escaped (a name can hold a newline or ESC).
    static func activeLine(_ active: RunProgress.Active) -> String {
        let stage = active.stage.isEmpty ? "…" : TerminalText.escaped(active.stage)
        var line = "  \(stage) \(TerminalText.escaped(active.path))"
        if active.bytesDone > 0 || active.bytesTotal != nil {
            line += "  \(ByteSize.format(active.bytesDone))"
            if let total = active.bytesTotal, total > 0 {
                line += " / \(ByteSize.format(total)) (\(active.bytesDone * 100 / total)%)"
            }
        }
        if let note = active.note { line += "  " + TerminalText.escaped(note) }
        return line
    }

    /// `12/40 files (1 failed) · 350 MiB · 11.2 MiB/s · ETA 1m05s`.
    static func statusLine(_ snapshot: RunProgress.Snapshot) -> String {
        var parts: [String] = []
        var files = "\(snapshot.filesDone)"
        if let total = snapshot.filesTotal { files += "/\(total)" }
        files += " files"
        if snapshot.filesFailed > 0 { files += " (\(snapshot.filesFailed) failed)" }
        parts.append(files)
        parts.append(ByteSize.format(snapshot.bytesDone))
        if snapshot.elapsed > 0.5 {
            let rate = Double(snapshot.bytesDone) / snapshot.elapsed
            parts.append("\(ByteSize.format(Int64(rate)))/s")
            if let total = snapshot.filesTotal, snapshot.filesDone > 0, total > snapshot.filesDone {
                let remaining = snapshot.elapsed / Double(snapshot.filesDone) * Double(total - snapshot.filesDone)
                parts.append("ETA \(formatSeconds(remaining))")
            }
        }
        return parts.joined(separator: " · ")
    }

    static func formatSeconds(_ seconds: Double) -> String { Timestamp.elapsed(seconds) }
}
