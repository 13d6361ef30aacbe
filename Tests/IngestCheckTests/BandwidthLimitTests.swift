import Foundation
import NativeCurl
import Synchronization
import Testing

@testable import IngestConfig
@testable import IngestCore

/// `--bwlimit` / `bwlimit:`: rclone's units, the timetable, and the refusal of absurd values.
@Suite struct BandwidthLimitParsingTests {
    func rate(_ text: String) throws -> Int64? {
        try BandwidthLimit(parsing: text).schedule.rate(atMinute: 0)
    }

    @Test func rcloneUnits() throws {
        #expect(try rate("8M") == 8 << 20)
        #expect(try rate("8MiB") == 8 << 20)
        #expect(try rate("8M/s") == 8 << 20)
        #expect(try rate("512k") == 512 << 10)
        #expect(try rate("512") == 512 << 10)  // a bare number is KiB/s, as rclone reads it
        #expect(try rate("1.5G") == 3 << 29)
        #expect(try rate("off") == nil)
        #expect(try BandwidthLimit(parsing: "OFF").isOff)
    }

    @Test func timetable() throws {
        let limit = try BandwidthLimit(parsing: "08:00,512k 19:00,off")
        #expect(limit.schedule.rate(atMinute: 8 * 60) == 512 << 10)
        #expect(limit.schedule.rate(atMinute: 12 * 60) == 512 << 10)
        #expect(limit.schedule.rate(atMinute: 19 * 60) == nil)
        #expect(limit.schedule.rate(atMinute: 7 * 60) == nil)  // before the first entry: the day's last one
        #expect(!limit.isOff)
    }

    @Test(arguments: ["0", "-1", "1e30", "8X", "", "0.5k", "200G", "25:00,1M", "08:00,1M 08:00,2M", "08:00", "a,b,c"])
    func absurdValuesAreRefused(text: String) {
        #expect(throws: BandwidthLimitError.self) { try BandwidthLimit(parsing: text) }
    }

    @Test func pipelineKey() throws {
        let yaml = "version: 1\nname: t\nbwlimit: 8M\nstages:\n  - validate: {}\n"
        #expect(try Pipeline.parse(yaml: yaml, environment: [:]).bandwidth?.schedule.rate(atMinute: 0) == 8 << 20)
        let errors = pipelineErrors(yaml.replacingOccurrences(of: "8M", with: "0"))
        #expect(errors.count == 1)
        #expect(errors.first?.description.contains("below 1 KiB/s") == true)
    }
}

/// The token bucket every transfer of a run draws from, on an injected clock (no wall-clock time).
@Suite struct SendLimiterTests {
    @Test func startsEmptyAndRefillsAtTheRate() {
        let clock = ManualClock()
        let limiter = SendLimiter(schedule: .constant(8 << 20), clock: clock)
        #expect(limiter.take(upTo: 256 << 10) == 0)
        #expect(limiter.secondsUntilAvailable() > 0)
        clock.advance(by: 0.01)
        let granted = limiter.take(upTo: 256 << 10)
        #expect(abs(granted - Int(Double(8 << 20) * 0.01)) <= 1)
        #expect(limiter.take(upTo: 256 << 10) == 0)
    }

    @Test func aPauseDoesNotBankMoreThanTheBurst() {
        let clock = ManualClock()
        let limiter = SendLimiter(schedule: .constant(8 << 20), clock: clock)
        clock.advance(by: 60)
        #expect(limiter.take(upTo: 100 << 20) == Int(Double(8 << 20) / 10))
    }

    /// Four transfers drawing 256 KiB reads every millisecond for 8 simulated seconds send 8 s of the cap between
    /// them, not 4 × 8 s: the cap is the run's, not each worker's.
    @Test func workersShareOneCap() {
        let clock = ManualClock()
        let limiter = SendLimiter(schedule: .constant(8 << 20), clock: clock)
        var sent = [Int](repeating: 0, count: 4)
        for _ in 0..<8000 {
            clock.advance(by: 0.001)
            for worker in sent.indices { sent[worker] += limiter.take(upTo: 256 << 10) }
        }
        let total = Double(sent.reduce(0, +))
        #expect(abs(total - 64 * 1_048_576) <= 8 * 1024)
    }

    @Test func unusedAllowanceGoesBack() {
        let clock = ManualClock()
        let limiter = SendLimiter(schedule: .constant(1 << 20), clock: clock)
        clock.advance(by: 0.05)
        let granted = limiter.take(upTo: 1 << 20)
        limiter.giveBack(granted / 2)
        #expect(limiter.take(upTo: 1 << 20) == granted / 2)
    }

    @Test func theTimetableSwitchesTheCap() {
        // 18:59 UTC: the timetable is read in the limiter's time zone, on the run's clock's date.
        let clock = ManualClock(date: Date(timeIntervalSince1970: 18 * 3600 + 59 * 60))
        let limit = try? BandwidthLimit(parsing: "08:00,512k 19:00,off")
        let limiter = SendLimiter(schedule: limit!.schedule, clock: clock, timeZone: TimeZone(identifier: "UTC")!)
        clock.advance(by: 1)
        #expect(limiter.take(upTo: 1 << 20) == Int(Double(512 << 10) / 10))  // a tenth of a second of 512 KiB/s
        clock.advance(by: 59)  // 19:00
        #expect(limiter.take(upTo: 1 << 20) == 1 << 20)
        #expect(limiter.secondsUntilAvailable() == 0)
    }
}
