/// A moment's calendar fields in UTC (proleptic Gregorian, as `gmtime_r(3)` gives them), computed in Swift from the
/// day count (Howard Hinnant's `civil_from_days`): for the timestamps SigV4, S3 policies and logs write, without
/// Foundation's date formatters, which load ICU's calendar data (about 6 MiB of resident memory, issue 13), and
/// without C, so the model reads its times on its own.
package struct UTCTime: Equatable, Sendable {
    package var year: Int
    /// 1–12.
    package var month: Int
    package var day: Int
    package var hour: Int
    package var minute: Int
    package var second: Int

    /// The fields of whole second `floor(secondsSince1970)`. A value that is not finite, or outside years
    /// 1–9999, gives the nearest end of that range rather than trapping on the conversion to an integer.
    package init(secondsSince1970: Double) {
        let limits = (-62_135_596_800.0, 253_402_300_799.0)  // 0001-01-01T00:00:00Z, 9999-12-31T23:59:59Z
        let clamped = secondsSince1970.isNaN ? 0 : min(max(secondsSince1970.rounded(.down), limits.0), limits.1)
        let seconds = Int64(clamped)
        let (days, secondOfDay) = Self.floorDivision(seconds, 86_400)
        hour = Int(secondOfDay / 3600)
        minute = Int(secondOfDay % 3600 / 60)
        second = Int(secondOfDay % 60)
        // Days since 1970-01-01 → year, month, day, counting in 400-year eras that start on March 1st.
        let shifted = days + 719_468
        let era = Self.floorDivision(shifted, 146_097).quotient
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthFromMarch = (5 * dayOfYear + 2) / 153
        day = Int(dayOfYear - (153 * monthFromMarch + 2) / 5 + 1)
        month = Int(monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9)
        year = Int(yearOfEra + era * 400 + (month <= 2 ? 1 : 0))
    }

    /// Quotient rounded down and a remainder in 0..<divisor (Swift's `/` and `%` round toward zero).
    private static func floorDivision(_ value: Int64, _ divisor: Int64) -> (quotient: Int64, remainder: Int64) {
        let (quotient, remainder) = value.quotientAndRemainder(dividingBy: divisor)
        return remainder < 0 ? (quotient - 1, remainder + divisor) : (quotient, remainder)
    }

    /// `value` in decimal, zero-padded to `width` digits.
    package static func digits(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }
}
