#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A moment's calendar fields in UTC, from `gmtime_r(3)`: for the timestamps SigV4, S3 policies and logs write,
/// without Foundation's date formatters, which load ICU's calendar data (about 6 MiB of resident memory, issue 13).
package struct UTCTime: Equatable, Sendable {
    package var year: Int
    /// 1–12.
    package var month: Int
    package var day: Int
    package var hour: Int
    package var minute: Int
    package var second: Int

    /// The fields of whole second `floor(secondsSince1970)`. A value that is not finite, or outside years
    /// 1–9999, gives the nearest end of that range rather than trapping on the conversion to `time_t`.
    package init(secondsSince1970: Double) {
        let limits = (-62_135_596_800.0, 253_402_300_799.0)  // 0001-01-01T00:00:00Z, 9999-12-31T23:59:59Z
        let clamped = secondsSince1970.isNaN ? 0 : min(max(secondsSince1970.rounded(.down), limits.0), limits.1)
        var time = time_t(clamped)
        var fields = tm()
        gmtime_r(&time, &fields)
        year = Int(fields.tm_year) + 1900
        month = Int(fields.tm_mon) + 1
        day = Int(fields.tm_mday)
        hour = Int(fields.tm_hour)
        minute = Int(fields.tm_min)
        second = Int(fields.tm_sec)
    }

    /// `value` in decimal, zero-padded to `width` digits.
    package static func digits(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }
}
