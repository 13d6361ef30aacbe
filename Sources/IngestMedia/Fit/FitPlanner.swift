import Foundation

/// What a recording is, for planning an encode that lands under a byte limit.
package struct FitSource: Sendable, Equatable {
    /// Seconds, from the container.
    package var duration: Double
    /// Coded size the encode would otherwise use (after `max_width`/`max_height`).
    package var width: Int
    package var height: Int
    /// True when a quarter-turn display matrix swaps the axes: the steps name the displayed short side.
    package var swapped: Bool
    /// Output frames per second (the source's, capped by `max_fps`).
    package var frameRate: Double
    /// Bits per second the audio track will take in the output (0 without audio).
    package var audioBitRate: Int
    /// Audio sample rate, for the container's per-packet index (nil without audio).
    package var audioSampleRate: Int?

    package init(
        duration: Double, width: Int, height: Int, swapped: Bool = false, frameRate: Double, audioBitRate: Int,
        audioSampleRate: Int?
    ) {
        self.duration = duration
        self.width = width
        self.height = height
        self.swapped = swapped
        self.frameRate = frameRate
        self.audioBitRate = audioBitRate
        self.audioSampleRate = audioSampleRate
    }
}

/// The encode a limit leaves room for: the picture step and the video bit rate.
package struct VideoFit: Sendable, Equatable {
    package var width: Int
    package var height: Int
    /// The displayed short side (`1080p`), as phones and players name sizes.
    package var step: String
    /// True when the picture is smaller than the source's (after `max_width`/`max_height`).
    package var scaled: Bool
    /// Video bits per second for x264's two-pass rate control.
    package var videoBitRate: Int
    package var bitsPerPixel: Double
}

/// Why a recording cannot fit: what it is, what the limit leaves, what it would need.
package struct FitShortfall: Error, Sendable, Equatable {
    package var duration: Double
    package var maxBytes: Int64
    /// Total bits per second (video at the floor at the smallest step, plus audio) the recording would need.
    package var neededBitRate: Int
    /// Total bits per second the limit leaves after the container's share.
    package var availableBitRate: Int
    package var smallestStep: String
    /// How `neededBitRate` is made up (`video at 0.05 bits per pixel, plus audio`).
    package var floor: String

    package var message: String {
        let seconds = String(format: "%.1f", duration)
        return "a \(seconds) s recording cannot fit \(FitPlanner.formatBytes(maxBytes)): even at \(smallestStep) it "
            + "needs \(FitPlanner.formatRate(neededBitRate)) (\(floor)), the limit leaves "
            + FitPlanner.formatRate(availableBitRate)
    }
}

/// Turns a byte limit into encoder settings, as a video engineer does with a calculator: the bits the limit holds
/// over the duration, less the container's index and a rate-control margin, less audio's share, are video's; a
/// picture too large for them (under `minimumBitsPerPixel`) is stepped down before quality drops further.
package enum FitPlanner {
    /// Bits per pixel per frame below which x264's picture turns visibly blocky on phone footage (0.05: 1080p30 at
    /// 3.1 Mbit/s, 720p30 at 1.4 Mbit/s, 360p30 at 0.35 Mbit/s). Under it the picture steps down.
    package static let minimumBitsPerPixel = 0.05
    /// Displayed short sides a picture steps down through.
    package static let steps = [2160, 1080, 720, 540, 360]
    /// Share of the limit held back for rate control's error (x264's two-pass lands within about 1 %).
    package static let rateControlMargin = 0.02
    /// Encodes of one file at most: the first, then re-encodes lower after an overshoot.
    package static let maxAttempts = 3
    /// Lowest AAC rate per channel a fit may choose.
    package static let minimumAudioBitRatePerChannel = 16_000

    /// Bytes the MP4 container adds beyond the streams: headers plus the index's entries (sizes, times, offsets)
    /// for every video frame and audio packet.
    package static func containerOverhead(duration: Double, frameRate: Double?, audioSampleRate: Int?) -> Int64 {
        let frames = duration * (frameRate ?? 0)
        let audioPackets = duration * Double(audioSampleRate ?? 0) / 1024
        return 64 * 1024 + Int64((frames * 24 + audioPackets * 12).rounded(.up))
    }

    /// Bits per second all streams together may take so the file lands under `maxBytes`; ≤ 0 when the container's
    /// share alone fills it.
    package static func streamBitRate(maxBytes: Int64, duration: Double, overhead: Int64) -> Int {
        guard duration > 0 else { return 0 }
        let payload = Double(maxBytes - overhead) * (1 - rateControlMargin)
        return payload <= 0 ? 0 : Int((payload * 8 / duration).rounded(.down))
    }

    /// The largest step whose picture gets at least `minimumBitsPerPixel` from the video bit rate the limit leaves
    /// (the rate then capped at `capBitRate`); `FitShortfall` when even the smallest cannot.
    package static func plan(_ source: FitSource, maxBytes: Int64, capBitRate: Int? = nil) throws(FitShortfall)
        -> VideoFit
    {
        let overhead = containerOverhead(
            duration: source.duration, frameRate: source.frameRate, audioSampleRate: source.audioSampleRate)
        let total = streamBitRate(maxBytes: maxBytes, duration: source.duration, overhead: overhead)
        // The step is the limit's choice; the cap only lowers the rate at that step.
        let budget = total - source.audioBitRate
        let candidates = sizes(source)
        for (width, height, step) in candidates {
            let pixelsPerSecond = Double(width * height) * max(source.frameRate, 1)
            if Double(budget) / pixelsPerSecond >= minimumBitsPerPixel {
                let video = min(budget, capBitRate ?? .max)
                return VideoFit(
                    width: width, height: height, step: "\(step)p", scaled: width != source.width,
                    videoBitRate: video, bitsPerPixel: (Double(video) / pixelsPerSecond * 1000).rounded() / 1000)
            }
        }
        let smallest = candidates[candidates.count - 1]
        let needed = Double(smallest.width * smallest.height) * max(source.frameRate, 1) * minimumBitsPerPixel
        throw FitShortfall(
            duration: source.duration, maxBytes: maxBytes,
            neededBitRate: Int(needed.rounded(.up)) + source.audioBitRate,
            availableBitRate: max(total, 0), smallestStep: "\(smallest.step)p",
            floor: "video at \(minimumBitsPerPixel) bits per pixel, plus audio")
    }

    /// The source's size, then every step below its displayed short side, as even coded sizes with the aspect kept.
    static func sizes(_ source: FitSource) -> [(width: Int, height: Int, step: Int)] {
        let short = min(source.width, source.height)
        var sizes = [(source.width, source.height, short)]
        for step in steps where step < short {
            let scale = Double(step) / Double(short)
            func even(_ value: Int) -> Int { max(2, Int((Double(value) * scale / 2).rounded()) * 2) }
            sizes.append((even(source.width), even(source.height), step))
        }
        return sizes
    }

    /// The bit rate to try after an encode came out `actualBytes` against `maxBytes`: lowered by the overshoot's
    /// bits per second (all of it is the re-encoded stream's to give back) and at least in proportion, then by the
    /// margin again, so the next attempt lands under rather than on the limit.
    package static func retryBitRate(previous: Int, actualBytes: Int64, maxBytes: Int64, duration: Double) -> Int {
        let excess = Double(max(actualBytes - maxBytes, 0)) * 8 / max(duration, 0.001)
        let proportional = Double(previous) * Double(maxBytes) / Double(max(actualBytes, 1))
        let lowered = min(Double(previous) - excess, proportional) * (1 - rateControlMargin)
        return max(Int(lowered.rounded(.down)), 1)
    }

    /// The AAC bit rate an audio-only recording of `duration` may use under `maxBytes`: `wanted` when it fits,
    /// lower when not; `FitShortfall` below `minimumAudioBitRatePerChannel`.
    package static func audioBitRate(
        wanted: Int, channels: Int, sampleRate: Int, duration: Double, maxBytes: Int64
    ) throws(FitShortfall) -> Int {
        let overhead = containerOverhead(duration: duration, frameRate: nil, audioSampleRate: sampleRate)
        let total = streamBitRate(maxBytes: maxBytes, duration: duration, overhead: overhead)
        let floor = minimumAudioBitRatePerChannel * max(channels, 1)
        guard total >= floor else {
            throw FitShortfall(
                duration: duration, maxBytes: maxBytes, neededBitRate: floor, availableBitRate: max(total, 0),
                smallestStep: "\(channels == 1 ? "mono" : "stereo") AAC",
                floor: "\(minimumAudioBitRatePerChannel / 1000) kbit/s per channel")
        }
        return min(wanted, total)
    }

    package static func formatRate(_ bitsPerSecond: Int) -> String {
        bitsPerSecond >= 1_000_000
            ? String(format: "%.2f Mbit/s", Double(bitsPerSecond) / 1e6)
            : String(format: "%.0f kbit/s", Double(bitsPerSecond) / 1e3)
    }

    package static func formatBytes(_ bytes: Int64) -> String {
        bytes >= 1_000_000 ? String(format: "%.1f MB", Double(bytes) / 1e6) : "\(bytes) bytes"
    }
}
