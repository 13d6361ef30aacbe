import Foundation

/// RFC 3339 in UTC with milliseconds (2026-11-24T12:31:55.123Z), exactly as `ISO8601DateFormatter` with
/// `.withInternetDateTime, .withFractionalSeconds` writes it (rounded to the nearest millisecond), but without
/// it: the formatter loads ICU's calendar and locale data, about 6 MiB of resident memory for the first
/// timestamp of a run (issue 13's peak-RSS goal).
package enum Timestamp {
    package static func string(_ date: Date) -> String {
        let total = Int(((date.timeIntervalSinceReferenceDate + 978_307_200) * 1000).rounded())
        let (seconds, milliseconds) = total.quotientAndRemainder(dividingBy: 1000)
        let t = UTCTime(secondsSince1970: Double(milliseconds < 0 ? seconds - 1 : seconds))
        let d = UTCTime.digits
        let day = "\(d(t.year, 4))-\(d(t.month, 2))-\(d(t.day, 2))"
        let clock = "\(d(t.hour, 2)):\(d(t.minute, 2)):\(d(t.second, 2))"
        return "\(day)T\(clock).\(d(milliseconds < 0 ? milliseconds + 1000 : milliseconds, 3))Z"
    }

    /// A duration as the live display and messages show it: `42s`, `3m07s`, `2h05m`.
    package static func elapsed(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded())
        if whole >= 3600 { return "\(whole / 3600)h\(String(format: "%02d", whole % 3600 / 60))m" }
        if whole >= 60 { return "\(whole / 60)m\(String(format: "%02d", whole % 60))s" }
        return "\(whole)s"
    }
}
