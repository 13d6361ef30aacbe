import Foundation
import NativeSystem
import Testing

@testable import Ingest
@testable import IngestNetwork

/// The one gmtime_r behind X-Amz-Date, S3 policy expirations and log timestamps: exact fields for real dates, and
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
}
