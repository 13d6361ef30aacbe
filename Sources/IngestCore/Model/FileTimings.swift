import Foundation

/// How long one file took, for the reports: when it started, seconds per stage, and each request's attempts (a
/// file that passed after two 503s says so in the JSON Lines report). Stages append from the file's worker; parts of
/// a multipart upload from their own threads, hence the lock.
package final class FileTimings: @unchecked Sendable {
    package let started = Date()
    private let lock = NSLock()
    private var stages: [(name: String, seconds: Double)] = []
    private var requests: [JSONValue] = []

    package init() {}

    package func stage(_ name: String, seconds: Double) { lock.withLock { stages.append((name, seconds)) } }

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
        lock.withLock { requests.append(.object(object)) }
    }

    /// Seconds from the start until now.
    package var seconds: Double { Date().timeIntervalSince(started) }

    /// `{"started": "2026-…Z", "seconds": 1.234, "stages": [{"stage": "probe", "seconds": 0.01}], "requests": […]}`.
    package var json: JSONValue {
        lock.withLock {
            var object: JSONObject = [
                "started": .string(Timestamp.string(started)), "seconds": .double(Self.rounded(seconds)),
                "stages": .array(
                    stages.map { .object(["stage": .string($0.name), "seconds": .double(Self.rounded($0.seconds))]) }),
            ]
            if !requests.isEmpty { object["requests"] = .array(requests) }
            return .object(object)
        }
    }

    static func rounded(_ seconds: Double) -> Double { (seconds * 1000).rounded() / 1000 }
}
