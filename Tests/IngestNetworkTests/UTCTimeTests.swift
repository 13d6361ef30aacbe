import Foundation
import Testing

@testable import IngestCore
@testable import IngestNetwork

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The one UTCTime (gmtime_r's fields, computed in Swift) behind X-Amz-Date, S3 policy expirations and log timestamps: exact fields for real dates, and
/// no trap on a date no calendar holds (a `Date` built from an absurd `--expires` or a broken clock).
@Suite struct UTCTimeTests {
    @Test func fieldsOfKnownMoments() {
        let t = UTCTime(secondsSince1970: 1_734_622_222.9)  // 2024-12-19T15:30:22.9Z
        #expect([t.year, t.month, t.day, t.hour, t.minute, t.second] as [Int] == [2024, 12, 19, 15, 30, 22])
        let before = UTCTime(secondsSince1970: -0.5)  // the last half second of 1969
        #expect([before.year, before.month, before.day, before.second] as [Int] == [1969, 12, 31, 59])
        #expect(SigV4Signer.timestamp(for: Date(timeIntervalSince1970: 1_440_938_160)) == "20150830T123600Z")
        #expect(S3PostPolicy.formatDate(Date(timeIntervalSince1970: 951_782_400)) == "2000-02-29T00:00:00Z")
    }

    @Test(arguments: [Double.nan, .infinity, -.infinity, 1e300, -1e300, Double(Int64.max), Double(Int64.min)])
    func absurdDatesClampInsteadOfTrapping(_ seconds: Double) {
        let t = UTCTime(secondsSince1970: seconds)
        #expect((1...9999).contains(t.year), "\(seconds) → \(t)")
        let stamp = SigV4Signer.timestamp(for: Date(timeIntervalSince1970: seconds))
        #expect(stamp.count == 16, "\(seconds) → \(stamp)")
    }

    /// The fields are gmtime_r's, second for second, across the years a timestamp can hold (leap years, the 400-year
    /// rule at 2000 and 2100, before 1970, the ends of the range).
    @Test func fieldsAreGmtimeRs() {
        var generator = SystemRandomNumberGenerator()
        let edges: [Int64] = [
            -62_135_596_800, -62_135_596_799, -86_401, -86_400, -1, 0, 1, 951_782_399, 951_782_400, 4_107_542_400,
            4_107_628_799, 253_402_300_799,
        ]
        let range: ClosedRange<Int64> = -62_135_596_800...253_402_300_799
        let samples = edges + (0..<20_000).map { _ in Int64.random(in: range, using: &generator) }
        for seconds in samples {
            var time = time_t(seconds)
            var fields = tm()
            gmtime_r(&time, &fields)
            let expected = [
                Int(fields.tm_year) + 1900, Int(fields.tm_mon) + 1, Int(fields.tm_mday), Int(fields.tm_hour),
                Int(fields.tm_min), Int(fields.tm_sec),
            ]
            let t = UTCTime(secondsSince1970: Double(seconds))
            #expect([t.year, t.month, t.day, t.hour, t.minute, t.second] == expected, "\(seconds)")
            if [t.year, t.month, t.day, t.hour, t.minute, t.second] != expected { break }
        }
    }
}
