import Foundation
import IngestCore
import Prometheus
import Synchronization

/// The metrics `--metrics-addr` serves, fed by each file's final report (`Runner.finished`) and by whoever lists
/// files (`listed`), kept in swift-prometheus' registry, which renders the text format (0.0.4). Bounded: one series
/// per outcome, per stage, and per stage and status.
package final class RunMetrics: Sendable {
    /// Upper bounds (seconds) of the stage duration histogram's buckets.
    static let bounds: [Double] = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600]

    /// The series served: name, unit and help text, in one table.
    enum Series {
        case files, sentBytes, requests, retries, durations, queueDepth, lastSuccess, healthy

        var descriptor: MetricNameDescriptor {
            let (name, unit, help): (String, String, String) =
                switch self {
                case .files: ("ingest_files", "total", "Files finished, by outcome.")
                case .sentBytes: ("ingest_sent_bytes", "total", "Bytes of files uploaded (counted when one passes).")
                case .requests: ("ingest_requests", "total", "Requests made, by stage and final HTTP status.")
                case .retries:
                    ("ingest_retries", "total", "Attempts repeated, by stage and the request's final status.")
                case .durations: ("ingest_stage_duration", "seconds", "Seconds one file spent in a stage.")
                case .queueDepth: ("ingest_queue_depth", "", "Files listed and not finished yet.")
                case .lastSuccess:
                    ("ingest_last_success_timestamp", "seconds", "When a file last passed (Unix time; 0: never).")
                case .healthy: ("ingest_healthy", "", "1 while healthy (/healthz answers 200), else 0.")
                }
            return MetricNameDescriptor(metricName: name, unitName: unit, helpText: help)
        }
    }

    /// What the registry's counters do not hold: the queue's two ends, the last success and the health.
    struct State {
        var listed = 0
        var reported = 0
        var lastSuccess: Double?
        /// Why the service is unhealthy (the journal cannot be written …); nil while healthy.
        var problem: String?
        /// Why the watched folders make it unhealthy (one is missing); nil while they are all there.
        var watchProblem: String?

        /// Every reason it is unhealthy, in one line; nil while healthy.
        var problems: String? {
            let all = [problem, watchProblem].compactMap { $0 }
            return all.isEmpty ? nil : all.joined(separator: "; ")
        }
    }

    private let state = Mutex(State())
    private let registry = PrometheusCollectorRegistry()
    /// The run's clock: what the last success's time says.
    private let clock: any WaitClock

    package init(clock: any WaitClock = SystemClock()) {
        self.clock = clock
        // Every outcome is there from the start, at 0, so a rate() over it has a first sample.
        for outcome in ["passed", "failed", "skipped"] { _ = counter(.files, [("outcome", outcome)]) }
        _ = counter(.sentBytes)
    }

    /// Files listed and not yet reported: the queue (walked but waiting, or set aside).
    package func listed(_ count: Int = 1) { state.withLock { $0.listed += count } }

    /// Sets or clears (nil) what makes `/healthz` answer 503.
    package func setProblem(_ problem: String?) { state.withLock { $0.problem = problem } }

    /// Sets or clears (nil) what the watched folders say against health (`ingest watch`: a folder missing).
    package func setWatchProblem(_ problem: String?) { state.withLock { $0.watchProblem = problem } }

    /// `nil` while healthy, else why not.
    package var problem: String? { state.withLock { $0.problems } }

    /// Counts one file's final report. `journalWritten`: the journal committed this file's records (a passed file
    /// whose network stages are journaled as barriers), which shows it can be written again. `sentBytes`: what the
    /// file's upload sent (0 when none).
    package func record(_ report: ItemReport, journalWritten: Bool = false, sentBytes: Int64 = 0) {
        let journalFailure = report.failures.first { $0.rule == .journal || $0.stage == "journal" }
        counter(.files, [("outcome", report.status.rawValue)]).increment()
        if report.status == .passed {
            counter(.sentBytes).increment(by: sentBytes)
        }
        count(report.timings)
        state.withLock { state in
            state.reported += 1
            if report.status == .passed { state.lastSuccess = clock.date.timeIntervalSince1970 }
            if let journalFailure {
                state.problem = "the journal cannot be written: \(journalFailure.message)"
            } else if journalWritten, state.problem?.hasPrefix("the journal") == true {
                state.problem = nil
            }
        }
    }

    /// The registry's counter of `series` with these labels (made on first use).
    private func counter(_ series: Series, _ labels: [(String, String)] = []) -> Counter {
        registry.makeCounter(descriptor: series.descriptor, labels: labels)
    }

    private func gauge(_ series: Series) -> Gauge { registry.makeGauge(descriptor: series.descriptor, labels: []) }

    /// Stage durations and requests from a report's timings (`FileTimings.json`).
    private func count(_ timings: JSONValue?) {
        guard case .object(let object)? = timings else { return }
        if case .array(let stages)? = object["stages"] {
            for case .object(let stage) in stages {
                guard case .string(let name)? = stage["stage"], let seconds = stage["seconds"]?.number else { continue }
                registry.makeValueHistogram(
                    descriptor: Series.durations.descriptor, labels: [("stage", name)], buckets: Self.bounds
                )
                .record(seconds)
            }
        }
        guard case .array(let requests)? = object["requests"] else { return }
        for case .object(let request) in requests {
            guard case .string(let stage)? = request["stage"] else { continue }
            let status = request["status"]?.number.map { String(Int($0)) } ?? "error"
            let labels = [("stage", stage), ("status", status)]
            counter(.requests, labels).increment()
            let attempts = Int(request["attempts"]?.number ?? 1)
            if attempts > 1 {
                counter(.retries, labels).increment(by: Int64(attempts - 1))
            }
        }
    }

    /// The exposition text `/metrics` serves: the gauges set from the state, then the registry's text.
    package func text() -> String {
        let state = state.withLock { $0 }
        gauge(.queueDepth).set(to: Double(max(0, state.listed - state.reported)))
        gauge(.lastSuccess).set(to: state.lastSuccess ?? 0)
        gauge(.healthy).set(to: state.problems == nil ? 1 : 0)
        return registry.emitToString()
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
