import Foundation
import IngestCore

/// Live counters of a run, updated by the runner (files) and by stages that move bytes (uploads, transcodes), and
/// read by a display. Thread-safe: workers update it concurrently.
package final class RunProgress: @unchecked Sendable {
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

    private let lock = NSLock()
    private let started = Date()
    private var filesDone = 0
    private var filesFailed = 0
    private var filesTotal: Int?
    private var finishedBytes: Int64 = 0
    private var active: [Int: Active] = [:]

    package init() {}

    func setTotal(_ total: Int) { lock.withLock { filesTotal = total } }

    func begin(_ id: Int, path: String) {
        lock.withLock { active[id] = Active(path: path, stage: "", bytesDone: 0, bytesTotal: nil) }
    }

    func stage(_ id: Int, _ name: String) {
        lock.withLock {
            active[id]?.stage = name
            active[id]?.bytesDone = 0
            active[id]?.bytesTotal = nil
            active[id]?.note = nil
        }
    }

    /// A waiting stage says where its job stands (`processing 40%`).
    package func note(_ id: Int, _ text: String) { lock.withLock { active[id]?.note = text } }

    /// A stage moving bytes reports how far it got (e.g. from curl's progress callback).
    package func bytes(_ id: Int, done: Int64, total: Int64?) {
        lock.withLock {
            active[id]?.bytesDone = done
            active[id]?.bytesTotal = total
        }
    }

    /// A file set aside for later (it comes back, and is counted, when it ends).
    func setAside(_ id: Int) { lock.withLock { active[id] = nil } }

    func end(_ id: Int, size: Int64, failed: Bool) {
        lock.withLock {
            active[id] = nil
            filesDone += 1
            if failed { filesFailed += 1 }
            finishedBytes += size
        }
    }

    package func snapshot() -> Snapshot {
        lock.withLock {
            Snapshot(
                filesDone: filesDone, filesFailed: filesFailed, filesTotal: filesTotal,
                bytesDone: finishedBytes + active.values.reduce(0) { $0 + $1.bytesDone },
                active: active.keys.sorted().compactMap { active[$0] }, elapsed: Date().timeIntervalSince(started))
        }
    }
}

/// Draws `RunProgress` on standard error: on a terminal, a status line plus a line per active file, redrawn in
/// place a few times a second; elsewhere (a pipe, or `CI=true`) a plain line every few seconds, so CI logs stay
/// readable. Standard output is left to the report.
package final class ProgressDisplay: @unchecked Sendable {
    private let progress: RunProgress
    private let interactive: Bool
    private let interval: Double
    private let condition = NSCondition()
    private var stopped = false
    private var thread: Thread?
    private var linesDrawn = 0

    package init(progress: RunProgress, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.progress = progress
        interactive = isatty(STDERR_FILENO) == 1 && environment["CI"] != "true" && environment["TERM"] != "dumb"
        interval = interactive ? 0.25 : 5
    }

    /// True when drawing in place on a terminal; false for the plain lines of a pipe or CI.
    package var isInteractive: Bool { interactive }

    package func start() {
        let thread = Thread { [self] in
            condition.lock()
            while !stopped {
                _ = condition.wait(until: Date().addingTimeInterval(interval))
                if stopped { break }
                draw()
            }
            condition.unlock()
        }
        thread.name = "ingest-progress"
        self.thread = thread
        thread.start()
    }

    /// Stops drawing and clears the live lines (on a terminal) so the report that follows starts clean.
    package func stop() {
        condition.lock()
        stopped = true
        condition.signal()
        if interactive { clear() }
        condition.unlock()
    }

    /// Runs `body` (which prints report lines or log events) with the live lines cleared, so the two never
    /// overwrite each other, then draws them again at once: left for the next tick, the status line would be gone
    /// most of the time in a batch whose results arrive faster than the ticks.
    package func withDisplayCleared<T>(_ body: () throws -> T) rethrows -> T {
        condition.lock()
        defer { condition.unlock() }
        if interactive { clear() }
        defer { if interactive && !stopped { draw() } }
        return try body()
    }

    private func draw() {
        let snapshot = progress.snapshot()
        var lines = [Self.statusLine(snapshot)]
        if interactive {
            lines += snapshot.active.prefix(8).map(Self.activeLine)
            clear()
            let width = Int(ProcessInfo.processInfo.environment["COLUMNS"] ?? "") ?? 120
            let text = lines.map { String($0.prefix(max(20, width - 1))) }.joined(separator: "\n") + "\n"
            FileHandle.standardError.write(Data(text.utf8))
            linesDrawn = lines.count
        } else {
            FileHandle.standardError.write(Data((lines[0] + "\n").utf8))
        }
    }

    private func clear() {
        guard linesDrawn > 0 else { return }
        FileHandle.standardError.write(Data(String(repeating: "\u{1B}[1A\u{1B}[2K", count: linesDrawn).utf8))
        linesDrawn = 0
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
