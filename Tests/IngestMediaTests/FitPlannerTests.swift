import Foundation
import Testing

@testable import IngestMedia

/// The arithmetic of `fit`: the limit's bits over the duration, the container's and audio's share, the picture steps.
@Suite struct FitPlannerTests {
    func source(_ width: Int, _ height: Int, seconds: Double, fps: Double = 30, audio: Int = 128_000) -> FitSource {
        FitSource(
            duration: seconds, width: width, height: height, frameRate: fps, audioBitRate: audio,
            audioSampleRate: audio > 0 ? 48000 : nil)
    }

    /// Three minutes of 1080p30 in 100 MB: about 4.3 Mbit/s of video, enough for 1080p.
    @Test func aLimitWithRoomKeepsThePictureAndSpendsTheBudget() throws {
        let fit = try FitPlanner.plan(source(1920, 1080, seconds: 180), maxBytes: 100_000_000)
        #expect(fit.step == "1080p")
        #expect(!fit.scaled)
        #expect(fit.width == 1920 && fit.height == 1080)
        // (100 MB − index) × 0.98 × 8 / 180 s − 128 kbit/s of audio.
        #expect(fit.videoBitRate > 4_100_000 && fit.videoBitRate < 4_300_000, "\(fit.videoBitRate)")
        let expectedBytes = Double(fit.videoBitRate + 128_000) * 180 / 8
        #expect(expectedBytes < 100_000_000 * 0.99)
    }

    /// Ten minutes of 4K30 in 100 MB leave about 1.2 Mbit/s: 2160p, 1080p and 720p are under the floor; 540p is not.
    @Test func aTightLimitStepsThePictureDown() throws {
        let fit = try FitPlanner.plan(source(3840, 2160, seconds: 600), maxBytes: 100_000_000)
        #expect(fit.step == "540p")
        #expect(fit.scaled)
        #expect(fit.width == 960 && fit.height == 540)
        #expect(fit.bitsPerPixel >= FitPlanner.minimumBitsPerPixel)
    }

    /// Portrait: the steps name the short side, so 1080×1920 steps to 720×1280, not 405×720 (eight minutes in
    /// 100 MB leave about 1.6 Mbit/s: 0.026 bits per pixel at 1080p, 0.06 at 720p).
    @Test func portraitStepsByItsShortSide() throws {
        let fit = try FitPlanner.plan(source(1080, 1920, seconds: 480, audio: 0), maxBytes: 100_000_000)
        #expect(fit.step == "720p")
        #expect(fit.width == 720 && fit.height == 1280)
    }

    /// An hour of 1080p in 25 MB: under the floor even at 360p — the failure says the duration, limit and need.
    @Test func tooLongForTheLimitCannotFit() throws {
        #expect(throws: FitShortfall.self) {
            try FitPlanner.plan(source(1920, 1080, seconds: 3600), maxBytes: 25_000_000)
        }
        do throws(FitShortfall) {
            _ = try FitPlanner.plan(source(1920, 1080, seconds: 3600), maxBytes: 25_000_000)
        } catch {
            #expect(error.smallestStep == "360p")
            // 640×360×30×0.05 + 128k audio.
            #expect(error.neededBitRate == 345_600 + 128_000)
            #expect(error.message.contains("3600.0 s"))
            #expect(error.message.contains("25.0 MB"))
            #expect(error.message.contains("474 kbit/s"))
        }
    }

    /// Audio alone bigger than the limit: no video bit rate is left at all.
    @Test func audioThatFillsTheLimitCannotFit() {
        #expect(throws: FitShortfall.self) {
            try FitPlanner.plan(source(640, 360, seconds: 600, audio: 512_000), maxBytes: 30_000_000)
        }
    }

    /// `bitrate` caps what the limit would allow.
    @Test func aConfiguredBitRateIsACeiling() throws {
        let fit = try FitPlanner.plan(source(1920, 1080, seconds: 60), maxBytes: 100_000_000, capBitRate: 5_000_000)
        #expect(fit.videoBitRate == 5_000_000)
    }

    /// After an overshoot the next rate gives back at least the excess and lands under the limit.
    @Test func anOvershootLowersTheRateByAtLeastTheExcess() {
        let next = FitPlanner.retryBitRate(
            previous: 4_000_000, actualBytes: 103_000_000, maxBytes: 100_000_000, duration: 200)
        // 3 MB over in 200 s is 120 kbit/s; proportionally 3 %; then the 2 % margin.
        #expect(next <= Int(4_000_000.0 * 100 / 103 * 0.98) + 1)
        #expect(next > 3_600_000)
        #expect(FitPlanner.retryBitRate(previous: 1000, actualBytes: 10_000_000, maxBytes: 1, duration: 1) == 1)
    }

    @Test func audioKeepsItsRateWhenItFitsAndLowersItWhenNot() throws {
        let kept = try FitPlanner.audioBitRate(
            wanted: 64000, channels: 1, sampleRate: 44100, duration: 600, maxBytes: 25_000_000)
        #expect(kept == 64000)
        // Two hours of mono in 25 MB: 27.8 kbit/s before the container's share (12 bytes a packet, 3.7 MB here).
        let lowered = try FitPlanner.audioBitRate(
            wanted: 64000, channels: 1, sampleRate: 44100, duration: 7_200, maxBytes: 25_000_000)
        #expect(lowered < 25_000 && lowered >= 16_000, "\(lowered)")
        #expect(throws: FitShortfall.self) {
            try FitPlanner.audioBitRate(
                wanted: 64000, channels: 1, sampleRate: 44100, duration: 36_000, maxBytes: 25_000_000)
        }
    }
}
