import Foundation
import IngestCore
import IngestMedia
import NativeFFmpeg

/// `video: { fit: { max_bytes } }`: what a user does by hand with ffmpeg and a calculator. The bits the limit
/// holds over the duration, less the container's index, a rate-control margin and audio's share, go to x264's
/// two-pass rate control (pass 1 once with x264's fast first-pass settings, its statistics in a file in the work
/// folder; pass 2 at the planned rate). The output is measured before it is kept: an overshoot is encoded again
/// lower (pass 2 only), at most `FitPlanner.maxAttempts` times, and never kept oversize.
extension VideoStage {
    /// What the transcode made, whichever way it ran.
    struct Encoded {
        var stats: TranscodeStats
        var after: ProbeResult
        var videoCopied: Bool
        var audioCopied: Bool
        /// The `fit` fact: the step and bit rate chosen, the attempts, the bytes written.
        var fit: JSONObject?
        /// Where the result is: the stage's output, or the item's own file when it was passed through untouched.
        var outputPath: String?
    }

    /// The transcode job for one input: the output container, faststart, the two streams' plans, metadata kept.
    func transcodePlan(
        _ input: MediaInput, video: (stream: Int, plan: VideoPlan), audio: (stream: Int, plan: AudioPlan)?,
        faststart: Bool = true
    ) -> TranscodePlan {
        TranscodePlan(
            container: options.container == .mov ? .mov : .mp4, faststart: faststart, video: video, audio: audio,
            skipDecodeErrors: options.onDecodeError == .skip, metadata: MediaStageSupport.carriedMetadata(input))
    }

    /// Passes a compliant recording that fits through (streams copied); otherwise plans and runs the fitted encode.
    func runFitted(
        _ item: Item, before: ProbeResult, streams: (video: StreamInfo, audio: StreamInfo?),
        target: (width: Int, height: Int), swapped: Bool, copy: (video: Bool, audio: Bool), to outputPath: String,
        maxBytes: Int64, context: StageContext
    ) throws -> Encoded {
        let (video, audio) = streams
        let audioPlan = audio.map { (stream: $0.index, plan: copy.audio ? AudioPlan.copy : audioEncoding($0)) }
        var fact: JSONObject = ["max_bytes": .int(maxBytes)]
        let sameContainer = before.content == (options.container == .mov ? .quicktime : .mp4)
        if copy.video, copy.audio, before.size <= maxBytes, sameContainer {
            // What the user recorded, byte for byte: no remux, no work file.
            fact["action"] = .string("passed through")
            fact["bytes"] = .int(before.size)
            return Encoded(
                stats: TranscodeStats(), after: before, videoCopied: true, audioCopied: true, fit: fact,
                outputPath: item.artifact)
        }
        if copy.video, copy.audio, before.size <= maxBytes {
            let run = try MediaStageSupport.transcodeOnce(
                item, before, Self.name, outputPath, context, maxBytes: maxBytes
            ) { input in
                transcodePlan(input, video: (video.index, .copy), audio: audioPlan)
            }
            if run.kept {
                fact["action"] = .string("remuxed")
                fact["bytes"] = .int(run.bytes)
                return try encoded(run.stats, outputPath, videoCopied: true, audioCopied: true, fit: fact, context)
            }
            context.logger?.info("video: fit: the remux came out \(run.bytes) bytes, over \(maxBytes); encoding")
        }
        let plan = try fitPlan(before, video: video, audio: audio, audioCopied: copy.audio, target, swapped, maxBytes)
        let message =
            "video: fit to \(FitPlanner.formatBytes(maxBytes)): \(plan.step) (\(plan.width)×\(plan.height)) at "
            + "\(FitPlanner.formatRate(plan.videoBitRate)), \(plan.bitsPerPixel) bits per pixel"
        context.logger?.info("\(message)")
        fact["action"] = .string("encoded")
        fact["step"] = .string(plan.step)
        fact["scaled"] = .bool(plan.scaled)
        fact["width"] = .int(Int64(plan.width))
        fact["height"] = .int(Int64(plan.height))
        fact["bits_per_pixel"] = .double(plan.bitsPerPixel)
        var settings = encoderSettings(video, width: plan.width, height: plan.height)
        settings.bitRate = Int(Double(plan.videoBitRate) * fitFirstAttemptScale)
        let (stats, attempts) = try twoPass(
            item, before, outputPath, context, settings: settings, video: video.index, audio: audioPlan,
            maxBytes: maxBytes)
        fact["video_bit_rate"] = .int(Int64(attempts.last?.bitRate ?? 0))
        fact["attempts"] = .array(
            attempts.map { .object(["bit_rate": .int(Int64($0.bitRate)), "bytes": .int($0.bytes)]) })
        fact["bytes"] = .int(attempts.last?.bytes ?? 0)
        return try encoded(stats, outputPath, videoCopied: false, audioCopied: copy.audio, fit: fact, context)
    }

    /// The step and bit rate for the limit; `cannot_fit` when even the smallest step falls under the floor.
    private func fitPlan(
        _ before: ProbeResult, video: StreamInfo, audio: StreamInfo?, audioCopied: Bool,
        _ target: (width: Int, height: Int), _ swapped: Bool, _ maxBytes: Int64
    ) throws -> VideoFit {
        guard let duration = before.duration, duration > 0, duration.isFinite else {
            throw ItemFailed(
                stage: Self.name, rule: .cannotFit,
                message: "the container states no duration, so no bit rate can be planned for the limit")
        }
        let settings = encoderSettings(video, width: target.width, height: target.height)
        var audioBitRate = 0
        var audioSampleRate: Int?
        if let audio {
            audioBitRate = audioCopied ? Int(audio.bitRate ?? 0) : options.audioBitrate.bitsPerSecond
            if audioCopied, audioBitRate == 0 { audioBitRate = options.audioBitrate.bitsPerSecond }
            audioSampleRate = audio.sampleRate ?? 48000
        }
        let source = FitSource(
            duration: duration, width: target.width, height: target.height, swapped: swapped,
            frameRate: Double(settings.frameRate.num) / Double(max(settings.frameRate.den, 1)),
            audioBitRate: audioBitRate, audioSampleRate: audioSampleRate)
        do throws(FitShortfall) {
            // Re-encoding adds no detail: never more than 1.5× the source's video rate (what H.264 needs to match HEVC).
            let sourceCap = video.bitRate.map { Int(min(Double($0) * 1.5, Double(Int.max / 2))) }
            let cap = [options.bitrate?.bitsPerSecond, sourceCap].compactMap { $0 }.min()
            return try FitPlanner.plan(source, maxBytes: maxBytes, capBitRate: cap)
        } catch {
            throw ItemFailed.cannotFit(stage: Self.name, error)
        }
    }

    /// Pass 1 once (video only, its output thrown away), then pass 2 until the output is at or under `maxBytes`.
    private func twoPass(
        _ item: Item, _ before: ProbeResult, _ outputPath: String, _ context: StageContext,
        settings: VideoEncoderSettings, video: Int, audio: (stream: Int, plan: AudioPlan)?, maxBytes: Int64
    ) throws -> (TranscodeStats, [(bitRate: Int, bytes: Int64)]) {
        let statsPath = outputPath + ".x264-stats"
        defer { for file in RateControlPass.files(statsPath: statsPath) { unlink(file) } }
        var settings = settings
        settings.pass = .first(statsPath: statsPath)
        let first = settings
        _ = try MediaStageSupport.transcodeOnce(
            item, before, Self.name, outputPath + ".pass1", context, maxBytes: nil, progressShare: (0, 2)
        ) {
            transcodePlan(
                $0, video: (video, .encode(first, maxFrameRate: options.maxFPS)), audio: nil, faststart: false)
        }
        var attempts: [(bitRate: Int, bytes: Int64)] = []
        while attempts.count < FitPlanner.maxAttempts {
            settings.pass = .second(statsPath: statsPath)
            let second = settings
            let run = try MediaStageSupport.transcodeOnce(
                item, before, Self.name, outputPath, context, maxBytes: maxBytes, progressShare: (1, 2)
            ) {
                transcodePlan($0, video: (video, .encode(second, maxFrameRate: options.maxFPS)), audio: audio)
            }
            attempts.append((second.bitRate ?? 0, run.bytes))
            if run.kept { return (run.stats, attempts) }
            let lower = FitPlanner.retryBitRate(
                previous: second.bitRate ?? 0, actualBytes: run.bytes, maxBytes: maxBytes,
                duration: before.duration ?? 1)
            context.logger?.info(
                "video: fit: \(run.bytes) bytes is over \(maxBytes); encoding again at \(FitPlanner.formatRate(lower))")
            settings.bitRate = lower
        }
        throw ItemFailed.stillTooLarge(
            stage: Self.name, bytes: attempts.last?.bytes ?? 0, maxBytes: maxBytes, attempts: attempts.count)
    }

    private func encoded(
        _ stats: TranscodeStats, _ outputPath: String, videoCopied: Bool, audioCopied: Bool, fit: JSONObject,
        _ context: StageContext
    ) throws -> Encoded {
        let after = try MediaStageSupport.probeOutput(
            outputPath, stage: Self.name, timeout: context.settings.probeTimeout)
        return Encoded(stats: stats, after: after, videoCopied: videoCopied, audioCopied: audioCopied, fit: fit)
    }

    /// `fit: { max_bytes }`: passed through when the file fits and complies, else two-pass x264 at the rate the
    /// duration allows (`runFitted`); the output is measured before it is kept.
    func runFit(_ item: Item, maxBytes: Int64, context: StageContext) throws -> StageOutcome {
        let stage = Self.name
        let before = try context.probe(item, stage: stage)
        let streams = try streams(of: before)
        let (video, audio, quarterTurn, target, copy) = (
            streams.video, streams.audio, streams.quarterTurn, streams.target, streams.copy
        )
        let outputPath = try MediaStageSupport.outputPath(
            for: item, fileExtension: options.container.rawValue, stage: stage, context: context)
        let done = try runFitted(
            item, before: before, streams: (video, audio), target: target, swapped: quarterTurn, copy: copy,
            to: outputPath, maxBytes: maxBytes, context: context)
        let stats = done.stats
        let passedThrough = done.outputPath == item.artifact

        var fact = JSONObject()
        fact["path"] = .string(passedThrough ? item.artifact : outputPath)
        fact["action"] = .string(
            passedThrough ? "passed_through" : done.videoCopied && done.audioCopied ? "remuxed" : "transcoded")
        fact["video"] = .string(done.videoCopied ? "copied" : "encoded")
        fact["audio"] = .string(audio == nil ? "none" : done.audioCopied ? "copied" : "encoded")
        fact["rotation"] = .string("kept as display matrix")
        fact["before"] = MediaStageSupport.describe(before)
        fact["after"] = MediaStageSupport.describe(done.after)
        if !done.videoCopied {
            fact["crf"] = options.bitrate == nil && done.fit == nil ? .int(Int64(options.crf)) : .null
            fact["preset"] = .string(options.preset)
            fact["frames_encoded"] = .int(Int64(stats.videoFramesEncoded))
            fact["frames_dropped"] = .int(Int64(stats.videoFramesDropped))
        } else {
            fact["packets_copied"] = .int(Int64(stats.packetsCopied))
        }
        if let fit = done.fit { fact["fit"] = .object(fit) }
        if passedThrough {
            item.facts[context.resultName ?? stage] = .object(fact)
            return .proceed
        }
        MediaStageSupport.finish(
            item, with: outputPath, probe: done.after, stats: stats, fact: fact, stage: stage, context: context)
        return .proceed
    }
}
