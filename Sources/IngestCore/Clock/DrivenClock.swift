import Dispatch
import Foundation
import Synchronization

/// A clock that a test drives for code looping on a thread of its own (the watcher's scans and settle ticks, the
/// metrics server's deadlines), as swift-clocks' `TestClock` does for async code: a sleep blocks until
/// `advance(by:)` moves the clock to its end. The test moves time on, then `waitForSleep(after:)` returns once the
/// thread has done what was due and gone back to sleep, so no test depends on how fast the machine is.
/// (`ManualClock`, whose sleeps return at once, is for code the test calls on its own thread.)
package final class DrivenClock: WaitClock {
    private struct Sleeper {
        var until: Double
        var wake: DispatchSemaphore
    }
    private struct State {
        var now: Double
        var date: Date
        var sleepers: [Sleeper] = []
        /// Sleeps begun so far (`waitForSleep(after:)`).
        var sleepsBegun = 0
    }
    private let state: Mutex<State>
    /// Signalled at each sleep begun (a counting semaphore: a spare signal only costs one more look).
    private let began = DispatchSemaphore(value: 0)

    package init(date: Date = Date()) {
        state = Mutex(State(now: 1000, date: date))
    }

    package var now: Double { state.withLock { $0.now } }
    package var date: Date { state.withLock { $0.date } }
    /// Sleeps begun so far: note it before `advance(by:)`, and give it to `waitForSleep(after:)`.
    package var sleepsBegun: Int { state.withLock { $0.sleepsBegun } }

    /// Moves the clock on, waking every sleep that ends by then.
    package func advance(by seconds: Double) {
        let woken = state.withLock { state -> [Sleeper] in
            state.now += seconds
            state.date.addTimeInterval(seconds)
            let now = state.now
            defer { state.sleepers.removeAll { $0.until <= now } }
            return state.sleepers.filter { $0.until <= now }
        }
        for sleeper in woken { sleeper.wake.signal() }
    }

    /// Blocks the test (up to `seconds` of real time: a bound on a thread that never sleeps on this clock) until a
    /// sleep after the first `count` begins; false when none did.
    package func waitForSleep(after count: Int, within seconds: Double = 20) -> Bool {
        let limit = DispatchTime.now() + seconds
        while state.withLock({ $0.sleepsBegun }) <= count {
            if began.wait(timeout: limit) == .timedOut { return state.withLock { $0.sleepsBegun } > count }
        }
        return true
    }

    /// Blocks until the clock is advanced `seconds` on; a cancelled run's sleep ends within a tenth of a second.
    package func sleep(_ seconds: Double, cancellation: (any WaitInterruption)?) -> Bool {
        if cancellation?.isCancelled == true { return false }
        let wake = DispatchSemaphore(value: 0)
        let asleep = state.withLock { state -> Bool in
            state.sleepsBegun += 1
            guard seconds > 0 else { return false }
            state.sleepers.append(Sleeper(until: state.now + seconds, wake: wake))
            return true
        }
        began.signal()
        guard asleep else { return true }
        while wake.wait(timeout: .now() + 0.1) == .timedOut {
            guard cancellation?.isCancelled == true else { continue }
            state.withLock { state in state.sleepers.removeAll { $0.wake === wake } }
            return false
        }
        return true
    }
}
