import IngestCore
import Foundation
import Synchronization

/// `10/hour`, `2/s`, `100/min`, `500/day`: at most that many requests start per window.
package struct Rate: OptionValue, Sendable, Equatable, CustomStringConvertible {
    package var count: Int
    package var window: Double

    package init(count: Int, window: Double) {
        self.count = count
        self.window = window
    }

    /// Requests per window: a count past this would only hold that many start times in memory.
    package static let countRange = 1...1_000_000

    package static func parse(_ text: String) -> Rate? {
        let parts = text.replacingOccurrences(of: " ", with: "").split(separator: "/")
        guard parts.count == 2, let count = Int(parts[0]), Rate.countRange.contains(count) else { return nil }
        let units: [String: Double] = [
            "s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60, "h": 3600, "hour": 3600, "d": 86400,
            "day": 86400,
        ]
        guard let window = units[String(parts[1])] else { return nil }
        return Rate(count: count, window: window)
    }

    package init(from node: ConfigNode) throws {
        guard let text = node.scalar, let rate = Rate.parse(text) else {
            throw node.error(
                "expected a rate such as 10/hour, 2/s or 100/min (a count between \(Rate.countRange.lowerBound) and "
                    + "\(Rate.countRange.upperBound) per s, min, hour or day), found \(node.kindDescription)")
        }
        self = rate
    }

    package static var jsonSchema: JSONValue {
        ["type": "string", "pattern": "^\\s*[0-9]+\\s*/\\s*(s|sec|second|m|min|minute|h|hour|d|day)\\s*$"]
    }

    package var description: String { "\(count) per \(JSONValue.format(window)) s" }
}

/// Client-side rate limit shared by every worker running one stage: a request that would exceed it waits for
/// a free slot (the file is queued, not failed), as the seed backends' 10/hour limits require.
package final class RateLimiter: Sendable {
    let rate: Rate
    /// Start times on the run's clock (`WaitClock.now`).
    private let starts = Mutex<[Double]>([])

    package init(rate: Rate) { self.rate = rate }

    /// How a wait for a slot ended.
    enum Acquired: Equatable {
        case slot
        /// The run was cancelled first (a 10/hour wait must not outlive Ctrl-C).
        case cancelled
        /// The next slot frees after `deadline`: the wait ended at the deadline, `freesIn` seconds before the slot.
        case pastDeadline(freesIn: Double)
    }

    /// Waits for a slot on `clock`, up to `deadline` when the stage has one.
    @discardableResult
    func acquire(
        cancellation: RunCancellation? = nil, clock: any WaitClock = SystemClock(), deadline: StageDeadline? = nil
    ) -> Acquired {
        while true {
            if cancellation?.isCancelled == true { return .cancelled }
            let now = clock.now
            let rate = rate
            // nil: a slot was taken; otherwise the seconds until the oldest start leaves the window.
            let wait: Double? = starts.withLock { starts in
                starts.removeAll { now - $0 >= rate.window }
                guard starts.count >= rate.count else {
                    starts.append(now)
                    return nil
                }
                return rate.window - (now - starts[0])
            }
            guard let wait else { return .slot }
            if let deadline, deadline.passed(by: wait, at: now) {
                let cut = clock.sleep(until: deadline.instant, cancellation: cancellation)
                return cut ? .pastDeadline(freesIn: wait - (clock.now - now)) : .cancelled
            }
            // Nothing frees a slot but time: sleep outside the lock, waking early when the run is cancelled.
            _ = clock.sleep(max(0.01, wait), cancellation: cancellation)
        }
    }
}

/// Rates compare by requests per second; from 1 a day to 1,000,000 a second.
extension Rate: Comparable, RangedOptionValue {
    package static func < (lhs: Rate, rhs: Rate) -> Bool {
        Double(lhs.count) / lhs.window < Double(rhs.count) / rhs.window
    }
    package static var defaultRange: ClosedRange<Rate> {
        Rate(count: 1, window: 86400)...Rate(count: countRange.upperBound, window: 1)
    }
    package var rangeText: String {
        let unit = [1: "s", 60: "min", 3600: "hour", 86400: "day"][Int(window)] ?? "\(JSONValue.format(window))s"
        return "\(count)/\(unit)"
    }
    package static func jsonSchema(in range: ClosedRange<Rate>) -> JSONValue { jsonSchema }
}
