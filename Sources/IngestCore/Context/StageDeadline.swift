import Foundation

/// A stage's own limit on the time one file spends in it (a poll's `timeout`): every wait inside the stage —
/// retries' backoff, `Retry-After`, a `rate` slot, the answer to a request — ends by it. A wait that would pass
/// it ends at it, and the file fails by the stage's timeout rule, naming what it was waiting for.
package struct StageDeadline: Sendable {
    /// The instant on the run's clock (`WaitClock.now`).
    package var instant: Double
    /// When the stage began (on the same clock), for "gave up after 6 s".
    package var began: Double
    /// How the pipeline names the limit, for the message (`timeout 6s`).
    package var name: String

    package init(began: Double, limit: Double, name: String) {
        self.began = began
        instant = began + limit
        self.name = name
    }

    /// Seconds left at `now` (0 once passed).
    package func remaining(at now: Double) -> Double { max(0, instant - now) }

    /// Whether a wait of `seconds` from `now` would pass the deadline.
    package func passed(by seconds: Double, at now: Double) -> Bool { now + seconds > instant }

    /// `gave up after 6 s (timeout 6s); ` + `what` — the message of the stage's timeout rule.
    package func gaveUp(at now: Double, waitingFor what: String) -> String {
        "gave up after \(JSONValue.format((now - began).rounded(toPlaces: 1))) s (\(name)); \(what)"
    }
}

extension Double {
    fileprivate func rounded(toPlaces places: Int) -> Double {
        let factor = pow(10, Double(places))
        return (self * factor).rounded() / factor
    }
}
