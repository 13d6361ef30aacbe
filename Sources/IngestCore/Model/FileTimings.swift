import Foundation
import Synchronization

/// How long one file took, for the reports: when it started, seconds per stage, and each request's attempts (a
/// file that passed after two 503s says so in the JSON Lines report). Stages append from the file's worker; parts of
/// a multipart upload from their own threads, hence the lock.
package final class FileTimings: Sendable {
    /// When the file started (the run's clock: what the report says).
    package let started: Date
    /// The run's clock, which the file's times are read on.
    package let clock: any WaitClock
    private let startedAt: Double
    private struct Recorded {
        var stages: [(name: String, seconds: Double)] = []
        var requests: [JSONValue] = []
    }
    private let recorded = Mutex(Recorded())

    package init(clock: any WaitClock = SystemClock()) {
        self.clock = clock
        started = clock.date
        startedAt = clock.now
    }

    package func stage(_ name: String, seconds: Double) { recorded.withLock { $0.stages.append((name, seconds)) } }

    /// One request's end: its method, redacted URL, attempts made, the last status (nil after an error) and the
    /// redirects the last attempt met (`RedirectHop.json`), so the report names every origin the data went to.
    package func request(
        stage: String, method: String, url: String, attempts: Int, status: Int?, redirects: [JSONValue] = []
    ) {
        var object: JSONObject = [
            "stage": .string(stage), "method": .string(method), "url": .string(Redaction.url(url)),
            "attempts": .int(Int64(attempts)),
        ]
        if let status { object["status"] = .int(Int64(status)) }
        if !redirects.isEmpty { object["redirects"] = .array(redirects) }
        recorded.withLock { $0.requests.append(.object(object)) }
    }

    /// Seconds from the start until now.
    package var seconds: Double { clock.now - startedAt }

    /// `{"started": "2026-…Z", "seconds": 1.234, "stages": [{"stage": "probe", "seconds": 0.01}], "requests": […]}`.
    package var json: JSONValue {
        recorded.withLock { recorded in
            var object: JSONObject = [
                "started": .string(Timestamp.string(started)), "seconds": .double(Self.rounded(seconds)),
                "stages": .array(
                    recorded.stages.map {
                        .object(["stage": .string($0.name), "seconds": .double(Self.rounded($0.seconds))])
                    }),
            ]
            if !recorded.requests.isEmpty { object["requests"] = .array(recorded.requests) }
            return .object(object)
        }
    }

    static func rounded(_ seconds: Double) -> Double { (seconds * 1000).rounded() / 1000 }
}
