import Dispatch
import Foundation
import Synchronization

/// The clock every wait reads and sleeps on (a retry's backoff, `Retry-After`, a `rate` slot, a poll's interval),
/// so that a stage's deadline is measured on the same clock its waits run on, and so that tests drive time
/// (`ManualClock`) instead of sleeping. A run has one (`RunSettings.clock`); mixing two in one run mixes scales.
package protocol WaitClock: Sendable {
    /// Seconds on a scale that only moves forward (not the wall clock, which NTP may step): for deadlines and
    /// elapsed times.
    var now: Double { get }
    /// The wall-clock date, for what is stated as one (an HTTP date in `Retry-After`).
    var date: Date { get }
    /// Blocks the calling thread for `seconds` (a worker's thread, not a core); returns false as soon as
    /// `cancellation` stops the run.
    func sleep(_ seconds: Double, cancellation: (any WaitInterruption)?) -> Bool
}

/// What cuts a wait short: the run's cancellation (`Context/Cancellation.swift`). A protocol here, so that the clock
/// needs nothing of the run's context (which holds the clock).
package protocol WaitInterruption: Sendable {
    var isCancelled: Bool { get }
    /// Waits up to `seconds` of real time; false as soon as the wait is interrupted (the real clock's sleep).
    func sleep(_ seconds: Double) -> Bool
}

extension WaitClock {
    /// Sleeps until `instant` on this clock's scale (at once when it has passed); false when the run was cancelled.
    package func sleep(until instant: Double, cancellation: (any WaitInterruption)?) -> Bool {
        let seconds = instant - now
        guard seconds > 0 else { return cancellation?.isCancelled != true }
        return sleep(seconds, cancellation: cancellation)
    }
}

/// The real clock: the monotonic uptime and real sleeps (cut short by a cancelled run).
package struct SystemClock: WaitClock {
    package init() {}

    package var now: Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    package var date: Date { Date() }

    package func sleep(_ seconds: Double, cancellation: (any WaitInterruption)?) -> Bool {
        guard seconds > 0 else { return cancellation?.isCancelled != true }
        if let cancellation { return cancellation.sleep(seconds) }
        Thread.sleep(forTimeInterval: seconds)
        return true
    }
}

/// A clock that tests drive: a sleep returns at once and moves the clock on by its length (recorded in
/// `sleeps`), so a test of a 60 s `Retry-After` or an hour's `rate` wait runs in no time and can say exactly how
/// long the code waited. Time moves only by sleeps and `advance(by:)`; several threads sleeping add up.
package final class ManualClock: WaitClock {
    private struct State {
        var now: Double
        var date: Date
        var sleeps: [Double] = []
    }
    private let state: Mutex<State>

    package init(date: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        state = Mutex(State(now: 1000, date: date))
    }

    package var now: Double { state.withLock { $0.now } }
    package var date: Date { state.withLock { $0.date } }
    /// Every sleep asked of the clock, in order, in seconds.
    package var sleeps: [Double] { state.withLock { $0.sleeps } }
    /// The seconds slept in all.
    package var slept: Double { sleeps.reduce(0, +) }

    package func advance(by seconds: Double) {
        state.withLock {
            $0.now += seconds
            $0.date.addTimeInterval(seconds)
        }
    }

    package func sleep(_ seconds: Double, cancellation: (any WaitInterruption)?) -> Bool {
        if cancellation?.isCancelled == true { return false }
        state.withLock { $0.sleeps.append(max(0, seconds)) }
        advance(by: max(0, seconds))
        return true
    }
}
