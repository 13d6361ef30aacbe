import Foundation
import Synchronization

/// `10/hour`, `2/s`, `100/min`, `500/day`: at most that many requests start per window.
public struct Rate: OptionValue, Sendable, Equatable, CustomStringConvertible {
    public var count: Int
    public var window: Double

    public init(count: Int, window: Double) {
        self.count = count
        self.window = window
    }

    /// Requests per window: a count past this would only hold that many start times in memory.
    public static let countRange = 1...1_000_000

    public static func parse(_ text: String) -> Rate? {
        let parts = text.replacingOccurrences(of: " ", with: "").split(separator: "/")
        guard parts.count == 2, let count = Int(parts[0]), Rate.countRange.contains(count) else { return nil }
        let units: [String: Double] = [
            "s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60, "h": 3600, "hour": 3600, "d": 86400,
            "day": 86400,
        ]
        guard let window = units[String(parts[1])] else { return nil }
        return Rate(count: count, window: window)
    }

    public init(from node: ConfigNode) throws {
        guard let text = node.scalar, let rate = Rate.parse(text) else {
            throw node.error(
                "expected a rate such as 10/hour, 2/s or 100/min (a count between \(Rate.countRange.lowerBound) and "
                    + "\(Rate.countRange.upperBound) per s, min, hour or day), found \(node.kindDescription)")
        }
        self = rate
    }

    public static var jsonSchema: JSONValue {
        ["type": "string", "pattern": "^\\s*[0-9]+\\s*/\\s*(s|sec|second|m|min|minute|h|hour|d|day)\\s*$"]
    }

    public var description: String { "\(count) per \(JSONValue.format(window)) s" }
}

/// Client-side rate limit shared by every worker running one stage: a request that would exceed it waits for
/// a free slot (the file is queued, not failed), as the seed backends' 10/hour limits require.
final class RateLimiter: Sendable {
    let rate: Rate
    private let starts = Mutex<[Date]>([])

    init(rate: Rate) { self.rate = rate }

    /// Waits for a slot; false when `cancellation` stops the run first (a 10/hour wait must not outlive Ctrl-C).
    @discardableResult
    func acquire(cancellation: RunCancellation? = nil) -> Bool {
        while true {
            if cancellation?.isCancelled == true { return false }
            let now = Date()
            let rate = rate
            // nil: a slot was taken; otherwise the seconds until the oldest start leaves the window.
            let wait: Double? = starts.withLock { starts in
                starts.removeAll { now.timeIntervalSince($0) >= rate.window }
                guard starts.count >= rate.count else {
                    starts.append(now)
                    return nil
                }
                return rate.window - now.timeIntervalSince(starts[0])
            }
            guard let wait else { return true }
            // Nothing frees a slot but time: sleep outside the lock, waking early when the run is cancelled.
            if let cancellation {
                _ = cancellation.sleep(max(0.01, wait))
            } else {
                Thread.sleep(forTimeInterval: max(0.01, wait))
            }
        }
    }
}
