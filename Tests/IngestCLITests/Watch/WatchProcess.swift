import Foundation
import Synchronization
import Testing

@testable import IngestTestSupport

/// One `ingest watch` process started for a test in `folder` (inputs under `in/`, the JSON Lines report at
/// `report.jsonl`, uploads of `method: local` under `out/`), and the helpers that wait on what it does: its report
/// lines, never the clock.
final class WatchProcess {
    let folder: String
    let process: Process
    private let errors = Pipe()
    /// Standard error, read as it comes (a full pipe would stop the process).
    private let collected = ErrorText()

    var report: String { folder + "/report.jsonl" }

    /// `ingest watch PIPELINE in ARGUMENTS --report report.jsonl -q`, in `folder`.
    init(folder: String, pipeline: String, _ arguments: [String] = [], environment: [String: String] = [:]) throws {
        self.folder = folder
        process = try startIngest(
            ["watch", pipeline, "in", "--report", "report.jsonl", "-q"] + arguments, in: folder,
            standardError: errors, environment: environment)
        let handle = errors.fileHandleForReading
        let collected = self.collected
        Thread.detachNewThread {
            while true {
                let data = handle.availableData
                if data.isEmpty { return }
                collected.append(data)
            }
        }
    }

    deinit { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }

    var stderr: String { collected.text }

    /// The report's objects for the file at `relative` under `in/`.
    func reports(_ relative: String) -> [[String: Any]] {
        reportObjects(report).filter { $0["path"] as? String == "in/" + relative }
    }

    /// Waits (polling every 50 ms, up to about `attempts` / 20 s) until `condition` holds; true once it does.
    func eventually(attempts: Int = 600, _ condition: () throws -> Bool) rethrows -> Bool {
        for _ in 0..<attempts {
            if try condition() { return true }
            if !process.isRunning { return try condition() }
            usleep(50_000)
        }
        return false
    }

    /// Waits for `count` reports of the file at `relative`.
    @discardableResult
    func waitForReports(_ relative: String, count: Int = 1, attempts: Int = 600) -> Bool {
        eventually(attempts: attempts) { reports(relative).count >= count }
    }

    /// Sends `signal` and waits for the exit; its status (SIGKILL after about 20 s without one, and -1).
    func stop(_ signal: Int32 = SIGTERM) -> Int32 {
        kill(process.processIdentifier, signal)
        for _ in 0..<400 where process.isRunning { usleep(50_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return -1
        }
        process.waitUntilExit()
        return process.terminationStatus
    }
}

/// Text gathered from a pipe on another thread.
final class ErrorText: Sendable {
    private let data = Mutex(Data())
    func append(_ more: Data) { data.withLock { $0.append(more) } }
    var text: String { String(decoding: data.withLock { $0 }, as: UTF8.self) }
}

/// A pipeline that probes each file and copies it under `out/` by name.
func watchPipeline(extra: String = "") -> String {
    """
    version: 1
    name: watch
    \(extra)
    stages:
      - probe:
      - upload: { method: local, dir: out, key: "{{file.name}}" }

    """
}
