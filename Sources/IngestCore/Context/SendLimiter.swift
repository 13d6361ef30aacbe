import Foundation
import Synchronization

/// One token bucket that every transfer of a run draws its request bodies from (`--bwlimit`): curl's read callback
/// takes what it may send now and pauses its transfer when the bucket is empty, so the sum of all workers' and all
/// upload methods' bytes stays at the cap. (curl's own `CURLOPT_MAX_SEND_SPEED_LARGE` caps one handle: N transfers
/// would need N shares rebalanced each time one starts, ends or stalls; one shared bucket needs none of that.)
package final class SendLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var stamp: Double
        var rate: Int64?
    }

    package let schedule: BandwidthSchedule
    /// The run's clock: `now` for refills, `date` (in `calendar`'s time zone) for the timetable.
    private let clock: any WaitClock
    private let calendar: Calendar
    private let bucket: Mutex<Bucket>

    /// `timeZone`: the timetable's (the machine's local time; tests pass UTC).
    package init(schedule: BandwidthSchedule, clock: any WaitClock = SystemClock(), timeZone: TimeZone = .current) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        self.schedule = schedule
        self.clock = clock
        self.calendar = calendar
        let rate = schedule.rate(atMinute: Self.minuteOfDay(clock.date, calendar))
        bucket = Mutex(Bucket(tokens: 0, stamp: clock.now, rate: rate))
    }

    /// Minutes after midnight, 0..<1440, of `date` in `calendar`'s time zone.
    private static func minuteOfDay(_ date: Date, _ calendar: Calendar) -> Int {
        let parts = calendar.dateComponents([.hour, .minute], from: date)
        return (parts.hour ?? 0) * 60 + (parts.minute ?? 0)
    }

    /// Bytes the bucket holds at most: a tenth of a second of the rate, at least 16 KiB (one curl read of a slow
    /// cap still goes out whole enough to keep the connection busy), so a pause never turns into a burst.
    static func burst(_ rate: Int64) -> Double { max(Double(rate) / 10, 16 * 1024) }

    /// Takes up to `wanted` bytes of allowance now; 0 when the caller must wait (see `secondsUntilAvailable`).
    package func take(upTo wanted: Int) -> Int {
        guard wanted > 0 else { return 0 }
        let now = clock.now
        let minute = Self.minuteOfDay(clock.date, calendar)
        return bucket.withLock { bucket in
            Self.refill(&bucket, now: now, rate: schedule.rate(atMinute: minute))
            guard bucket.rate != nil else { return wanted }
            let granted = min(wanted, Int(bucket.tokens.rounded(.down)))
            bucket.tokens -= Double(granted)
            return granted
        }
    }

    /// Gives back allowance taken but not used (a read that found fewer bytes than it was allowed).
    package func giveBack(_ bytes: Int) {
        guard bytes > 0 else { return }
        bucket.withLock { bucket in
            guard let rate = bucket.rate else { return }
            bucket.tokens = min(Self.burst(rate), bucket.tokens + Double(bytes))
        }
    }

    /// How long until at least 1 KiB of allowance is there (0 with no cap in force).
    package func secondsUntilAvailable() -> Double {
        let now = clock.now
        let minute = Self.minuteOfDay(clock.date, calendar)
        return bucket.withLock { bucket in
            Self.refill(&bucket, now: now, rate: schedule.rate(atMinute: minute))
            guard let rate = bucket.rate, rate > 0 else { return 0 }
            let missing = min(1024, Self.burst(rate)) - bucket.tokens
            return missing <= 0 ? 0 : missing / Double(rate)
        }
    }

    /// Adds what `rate` earned since the last look, up to the burst; a timetable change starts an empty bucket.
    private static func refill(_ bucket: inout Bucket, now: Double, rate: Int64?) {
        if rate != bucket.rate {
            bucket.rate = rate
            bucket.tokens = 0
            bucket.stamp = now
            return
        }
        guard let rate else { return }
        let elapsed = max(0, now - bucket.stamp)
        bucket.tokens = min(burst(rate), bucket.tokens + elapsed * Double(rate))
        bucket.stamp = now
    }
}
