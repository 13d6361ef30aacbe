import Dispatch
import Foundation

/// The real time that some waits and comparisons must follow instead of the run's clock, in one place so that
/// `scripts/check-clock.py` can hold every other read of the real clock out of `Sources/`. Each use says why it is
/// not the run's clock (`RunSettings.clock`, which tests drive):
/// - a *liveness bound* on a wait for another thread's signal (a worker woken by a new file, the journal's writer
///   woken by a batch): the signal ends the wait, the bound only makes a lost signal cost a moment, and a test's
///   clock would turn the wait into a busy loop;
/// - time kept by *another party's real clock*: the kernel's file times (a watched file's settle, a dead run's lock
///   file's age) and PostgreSQL's `now()` (a lease's expiry), which no test clock moves.
package enum RealTime {
    /// The deadline `seconds` from now for a condition wait (`NSCondition.wait(until:)`).
    package static func deadline(in seconds: Double) -> Date { Date(timeIntervalSinceNow: seconds) }

    /// The deadline `seconds` from now for a semaphore's wait.
    package static func dispatchDeadline(in seconds: Double) -> DispatchTime { .now() + seconds }

    /// Now on the kernel's real clock, in nanoseconds since 1970: the clock that stamps file times (`st_mtime`,
    /// `st_ctime`), to compare them with.
    package static var fileTimeNow: Int64 { Int64(Date().timeIntervalSince1970 * 1e9) }
}
