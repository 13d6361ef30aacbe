import IngestCore
import IngestMedia
import IngestTemplates
import IngestJournal
import IngestStages
import IngestConfig
import IngestNative
import Foundation
import Synchronization

/// The counters `--metrics-addr` serves, fed by each file's final report (`Runner.finished`) and by whoever lists
/// files (`listed`), rendered in Prometheus' text format (version 0.0.4) by hand: a few counters, gauges and
/// histograms do not justify a dependency (docs/service.md says why). Bounded: one series per outcome, per stage
/// and status.
package final class RunMetrics: Sendable {
    /// Upper bounds (seconds) of the stage duration histogram's buckets.
    static let bounds: [Double] = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600]

    struct Histogram {
        var counts = [Int](repeating: 0, count: RunMetrics.bounds.count)
        var sum = 0.0
        var count = 0
    }

    struct Key: Hashable, Comparable {
        var stage: String
        var status: String
        static func < (left: Key, right: Key) -> Bool { (left.stage, left.status) < (right.stage, right.status) }
    }

    struct State {
        var files: [String: Int] = ["passed": 0, "failed": 0, "skipped": 0]
        var sentBytes: Int64 = 0
        var requests: [Key: Int] = [:]
        var retries: [Key: Int] = [:]
        var durations: [String: Histogram] = [:]
        var listed = 0
        var reported = 0
        var lastSuccess: Double?
        /// Why the service is unhealthy (the journal cannot be written …); nil while healthy.
        var problem: String?
    }

    private let state = Mutex(State())

    package init() {}

    /// Files listed and not yet reported: the queue (walked but waiting, or set aside).
    package func listed(_ count: Int = 1) { state.withLock { $0.listed += count } }

    /// Sets or clears (nil) what makes `/healthz` answer 503.
    package func setProblem(_ problem: String?) { state.withLock { $0.problem = problem } }

    /// `nil` while healthy, else why not.
    package var problem: String? { state.withLock { $0.problem } }

    /// Counts one file's final report. `journalWritten`: the journal committed this file's records (a passed file
    /// whose network stages are journaled as barriers), which shows it can be written again. `sentBytes`: what the
    /// file's upload sent (0 when none).
    package func record(_ report: ItemReport, journalWritten: Bool = false, sentBytes: Int64 = 0) {
        let journalFailure = report.failures.first { $0.rule == .journal || $0.stage == "journal" }
        state.withLock { state in
            state.files[report.status.rawValue, default: 0] += 1
            state.reported += 1
            if report.status == .passed {
                state.lastSuccess = Date().timeIntervalSince1970
                state.sentBytes += sentBytes
            }
            if let journalFailure {
                state.problem = "the journal cannot be written: \(journalFailure.message)"
            } else if journalWritten, state.problem?.hasPrefix("the journal") == true {
                state.problem = nil
            }
            RunMetrics.count(report.timings, into: &state)
        }
    }

    /// Stage durations and requests from a report's timings (`FileTimings.json`).
    private static func count(_ timings: JSONValue?, into state: inout State) {
        guard case .object(let object)? = timings else { return }
        if case .array(let stages)? = object["stages"] {
            for case .object(let stage) in stages {
                guard case .string(let name)? = stage["stage"], let seconds = stage["seconds"]?.number else { continue }
                var histogram = state.durations[name] ?? Histogram()
                for (index, bound) in bounds.enumerated() where seconds <= bound { histogram.counts[index] += 1 }
                histogram.sum += seconds
                histogram.count += 1
                state.durations[name] = histogram
            }
        }
        if case .array(let requests)? = object["requests"] {
            for case .object(let request) in requests {
                guard case .string(let stage)? = request["stage"] else { continue }
                let status = request["status"]?.number.map { String(Int($0)) } ?? "error"
                let key = Key(stage: stage, status: status)
                state.requests[key, default: 0] += 1
                let attempts = Int(request["attempts"]?.number ?? 1)
                if attempts > 1 { state.retries[key, default: 0] += attempts - 1 }
            }
        }
    }

    /// The exposition text `/metrics` serves.
    package func text() -> String {
        let state = state.withLock { $0 }
        var out = PrometheusText()
        out.family("ingest_files_total", "counter", "Files finished, by outcome.")
        for outcome in state.files.keys.sorted() {
            out.sample("ingest_files_total", ["outcome": outcome], Double(state.files[outcome] ?? 0))
        }
        out.family("ingest_sent_bytes_total", "counter", "Bytes of files uploaded (counted when the file passes).")
        out.sample("ingest_sent_bytes_total", [:], Double(state.sentBytes))
        out.family("ingest_requests_total", "counter", "Requests made, by stage and final HTTP status.")
        for key in state.requests.keys.sorted() {
            out.sample(
                "ingest_requests_total", ["stage": key.stage, "status": key.status], Double(state.requests[key]!))
        }
        out.family("ingest_retries_total", "counter", "Attempts repeated, by stage and the request's final status.")
        for key in state.retries.keys.sorted() {
            out.sample("ingest_retries_total", ["stage": key.stage, "status": key.status], Double(state.retries[key]!))
        }
        out.family("ingest_stage_duration_seconds", "histogram", "Seconds one file spent in a stage.")
        for stage in state.durations.keys.sorted() {
            out.histogram(stage, state.durations[stage]!, bounds: RunMetrics.bounds)
        }
        out.family("ingest_queue_depth", "gauge", "Files listed and not finished yet.")
        out.sample("ingest_queue_depth", [:], Double(max(0, state.listed - state.reported)))
        out.family("ingest_last_success_timestamp_seconds", "gauge", "When a file last passed (Unix time; 0: never).")
        out.sample("ingest_last_success_timestamp_seconds", [:], state.lastSuccess ?? 0)
        out.family("ingest_healthy", "gauge", "1 while healthy (/healthz answers 200), else 0.")
        out.sample("ingest_healthy", [:], state.problem == nil ? 1 : 0)
        return out.text
    }
}

extension JSONValue {
    /// An int or double as a Double.
    fileprivate var number: Double? {
        switch self {
        case .int(let value): return Double(value)
        case .double(let value): return value
        default: return nil
        }
    }
}
