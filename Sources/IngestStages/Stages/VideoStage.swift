import Foundation
import IngestCore
import IngestMedia
import IngestTemplates
import NativeFFmpeg

/// `video`: makes a .mov/.mp4/.mkv into H.264 (libx264) + AAC in MP4 or MOV with the moov atom first, within a
/// size and frame-rate budget — what the hockey-analysis backend (seeds 000/001) can take from any phone. Streams
/// that already comply are copied, not re-encoded (`mode: auto`).
///
/// Rotation is kept as metadata: the display matrix is copied to the output track, pixels stay as recorded (no
/// extra pass over every frame, and a remux and a transcode of the same clip agree). `max_width`/`max_height`
/// apply to the displayed orientation, so a portrait clip recorded 1920×1080 with a 90° matrix is limited as
/// 1080×1920.
package struct VideoStage: FramePassStage {
    package enum Container: String, OptionEnum, Sendable {
        case mp4, mov
    }

    package enum Mode: String, OptionEnum, Sendable {
        /// Copy each stream that already complies, encode the others.
        case auto
        /// Always decode and encode.
        case transcode
        /// Copy the streams as they are (no limits applied).
        case remux
    }

    package struct Options: StageOptions, Sendable {
        package var container = Container.mp4
        package var mode = Mode.auto
        package var maxWidth: Int?
        package var maxHeight: Int?
        package var crf = 23
        package var bitrate: BitRate?
        package var preset = "veryfast"
        package var maxFPS: Double?
        package var audioBitrate = BitRate(bitsPerSecond: 128_000)
        package var onDecodeError = DecodeErrorPolicy.fail
        package var fit: FitOptions?
        /// A named output made beside the file (a proxy) instead of replacing it.
        package var output: String?
        package init() {}

        package static var fields: [OptionField<Options>] {
            [
                OptionField("container", \.container, doc: "Output container: `mp4` or `mov`.", default: "mp4"),
                OptionField(
                    "mode", \.mode,
                    doc:
                        "`auto` copies streams that already comply (H.264/AAC within the limits) and encodes the rest; `transcode` always encodes; `remux` only copies.",
                    default: "auto"),
                OptionField(
                    "max_width", \.maxWidth, range: 16...16_384,
                    doc: "Widest displayed width in pixels (aspect ratio kept).",
                    default: "no limit"),
                OptionField(
                    "max_height", \.maxHeight, range: 16...16_384,
                    doc: "Tallest displayed height in pixels (aspect ratio kept).",
                    default: "no limit"),
                OptionField(
                    "crf", \.crf, range: 0...51, doc: "x264 constant rate factor, 0…51 (lower is better).",
                    default: "23"),
                OptionField(
                    "bitrate", \.bitrate, doc: "Average video bit rate (`2.5M`); replaces `crf` when given.",
                    default: "none (crf)"),
                OptionField(
                    "preset", \.preset, doc: "x264 preset, `ultrafast` … `veryslow`.", default: "veryfast"),
                OptionField(
                    "max_fps", \.maxFPS, range: 0.01...240, doc: "Highest frame rate; faster video has frames dropped.",
                    default: "no limit"),
                OptionField(
                    "audio_bitrate", \.audioBitrate, doc: "AAC bit rate when audio is encoded.", default: "128k"),
                OptionField(
                    "on_decode_error", \.onDecodeError,
                    doc: "`fail` the file on a damaged packet, or `skip` it and count it in the fact.",
                    default: "fail"),
                OptionField(
                    "fit", \.fit,
                    doc:
                        "`{max_bytes: 100MB}`: land the output at or under the limit — passed through when it fits, else x264 two-pass at the bit rate the duration allows, the picture stepped down (2160p → 1080p → 720p → 540p → 360p) below 0.05 bits per pixel; `cannot_fit` when even 360p cannot.",
                    default: "none"),
                OptionField(
                    "output", \.output,
                    doc:
                        "Make the video as a named output beside the file (a proxy: `output: proxy`) instead of replacing the file.",
                    default: "none (the video replaces the file)"),
            ]
        }

        package func validate(at node: ConfigNode) throws {
            if fit != nil, mode == .remux {
                throw node.error("fit needs mode auto or transcode: remux copies the streams and cannot lower the size")
            }
            if let output { try OutputName.check(output, at: node) }
            if let maxWidth, maxWidth < 16 { throw node.error("max_width must be at least 16") }
            if let maxHeight, maxHeight < 16 { throw node.error("max_height must be at least 16") }
            if !(0...51).contains(crf) { throw node.error("crf must be 0…51, found \(crf)") }
            if let maxFPS, !(maxFPS > 0 && maxFPS <= 240) { throw node.error("max_fps must be 0…240, found \(maxFPS)") }
            if !VideoStage.presets.contains(preset) {
                throw node.error(
                    "preset must be one of \(VideoStage.presets.joined(separator: ", ")), found \(ConfigNode.echo(preset))",
                    suggestion: closestMatch(to: preset, in: VideoStage.presets))
            }
        }
    }

    package static let name = "video"
    package static let templateOffer: TemplateOffer? = TemplateOffer(name: name, fields: nil)
    package static let summary =
        "Transcodes or remuxes .mov/.mp4/.mkv to H.264 + AAC in a faststart MP4/MOV within size and frame-rate limits."
    package static let writesWorkFiles = true

    static let presets = [
        "ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow", "placebo",
    ]
    /// x264's lookahead, bounded so memory stays flat whatever the preset (veryfast's own is 10).
    static let x264Params = "rc-lookahead=10"

    let options: Options
    /// Scales the first fitted encode's bit rate: tests force an overshoot with it to see the re-encode.
    var fitFirstAttemptScale = 1.0
    package init(options: Options) throws { self.options = options }

    package func run(_ item: Item, context: StageContext) throws -> StageOutcome {
        if options.output != nil { return try runAlone(item, context: context) }
        if let maxBytes = options.fit?.maxBytes.bytes { return try runFit(item, maxBytes: maxBytes, context: context) }
        let stage = Self.name
        let before = try context.probe(item, stage: stage)
        let job = try job(for: before)
        let outputPath = try MediaStageSupport.outputPath(
            for: item, fileExtension: options.container.rawValue, stage: stage, context: context)
        let (stats, after) = try MediaStageSupport.transcode(
            item, probe: before, to: outputPath, stage: stage, context: context, plan: job.plan)
        let fact = self.fact(job, before: before, after: after, stats: stats, path: outputPath)
        MediaStageSupport.finish(
            item, with: outputPath, probe: after, stats: stats, fact: fact, stage: stage, context: context)
        return .proceed
    }

    /// What the transcode of one file does with each stream.
    struct Job {
        var copy: (video: Bool, audio: Bool)
        var hasAudio: Bool
        var plan: (MediaInput) -> TranscodePlan
    }

    /// A movie's first video and audio streams, the picture size the limits allow and which streams are copied.
    struct Streams {
        var video: StreamInfo
        var audio: StreamInfo?
        var quarterTurn: Bool
        var target: (width: Int, height: Int)
        var copy: (video: Bool, audio: Bool)
    }

    /// The streams of `before` and what becomes of each, within the limits.
    func job(for before: ProbeResult) throws -> Job {
        let streams = try streams(of: before)
        let (video, audio, target, copy) = (streams.video, streams.audio, streams.target, streams.copy)
        let videoPlan: VideoPlan = copy.video ? .copy : videoEncoding(video, width: target.width, height: target.height)
        let audioPlan = audio.map { (stream: $0.index, plan: copy.audio ? AudioPlan.copy : audioEncoding($0)) }
        let options = options
        return Job(copy: copy, hasAudio: audio != nil) { input in
            TranscodePlan(
                container: options.container == .mov ? .mov : .mp4, faststart: true, video: (video.index, videoPlan),
                audio: audioPlan, skipDecodeErrors: options.onDecodeError == .skip,
                metadata: MediaStageSupport.carriedMetadata(input))
        }
    }

    /// Refuses what is not a movie with a picture; otherwise its streams and what the limits make of them.
    func streams(of before: ProbeResult) throws -> Streams {
        let stage = Self.name
        guard [.quicktime, .mp4, .matroska, .webm].contains(before.content) else {
            throw ItemFailed(
                stage: stage, rule: .unsupported, message: "content is \(before.content.displayName), not a movie",
                expected: "MOV, MP4 or MKV", actual: before.content.displayName)
        }
        guard let video = before.videoStreams.first, let width = video.width, let height = video.height else {
            throw ItemFailed(stage: stage, rule: .noVideo, message: "the file has no video stream")
        }
        let audio = before.audioStreams.first

        // Limits apply to what a viewer sees: a quarter turn swaps the coded axes.
        let quarterTurn = Int(((video.rotation ?? 0).rounded())).quotientAndRemainder(dividingBy: 180).remainder != 0
        let target = Self.fit(
            width: width, height: height, maxWidth: options.maxWidth, maxHeight: options.maxHeight,
            swapped: quarterTurn)
        let copy = streamsToCopy(video: video, audio: audio, fitsSize: target.width == width && target.height == height)
        return Streams(video: video, audio: audio, quarterTurn: quarterTurn, target: target, copy: copy)
    }

    /// The stage's fact: what was copied or encoded, before and after.
    func fact(_ job: Job, before: ProbeResult, after: ProbeResult, stats: TranscodeStats, path outputPath: String)
        -> JSONObject
    {
        let copy = job.copy
        var fact = JSONObject()
        fact["path"] = .string(outputPath)
        fact["action"] = .string(copy.video && copy.audio ? "remuxed" : "transcoded")
        fact["video"] = .string(copy.video ? "copied" : "encoded")
        fact["audio"] = .string(!job.hasAudio ? "none" : copy.audio ? "copied" : "encoded")
        fact["rotation"] = .string("kept as display matrix")
        fact["before"] = MediaStageSupport.describe(before)
        fact["after"] = MediaStageSupport.describe(after)
        if !copy.video {
            fact["crf"] = options.bitrate == nil ? .int(Int64(options.crf)) : .null
            fact["preset"] = .string(options.preset)
            fact["frames_encoded"] = .int(Int64(stats.videoFramesEncoded))
            fact["frames_dropped"] = .int(Int64(stats.videoFramesDropped))
        } else {
            fact["packets_copied"] = .int(Int64(stats.packetsCopied))
        }
        return fact
    }

    /// Which streams are copied as they are: all of them for `remux`, none for `transcode`; for `auto` the ones
    /// that already comply (H.264 within the size, frame-rate and bit-rate limits; AAC).
    func streamsToCopy(video: StreamInfo, audio: StreamInfo?, fitsSize: Bool) -> (video: Bool, audio: Bool) {
        switch options.mode {
        case .remux: return (true, true)
        case .transcode: return (false, false)
        case .auto:
            let fitsRate = options.maxFPS.map { (video.frameRate ?? 0) <= $0 + 0.01 } ?? true
            let fitsBitRate =
                options.bitrate.map { limit in
                    (video.bitRate ?? Int64.max) <= Int64(Double(limit.bitsPerSecond) * 1.15)
                } ?? true
            let videoComplies = video.codecName == "h264" && fitsSize && fitsRate && fitsBitRate
            let audioComplies = audio.map { $0.codecName == "aac" } ?? true
            return (videoComplies, audioComplies)
        }
    }

    /// How the video is encoded: x264 at the fitted size, with the source's frame rate (capped by `max_fps`) as
    /// the rate-control hint.
    func videoEncoding(_ video: StreamInfo, width: Int, height: Int) -> VideoPlan {
        .encode(encoderSettings(video, width: width, height: height), maxFrameRate: options.maxFPS)
    }

    /// x264's settings at `width`×`height`: `crf` or `bitrate`, the preset, and the output frame rate.
    func encoderSettings(_ video: StreamInfo, width: Int, height: Int) -> VideoEncoderSettings {
        var frameRate = (num: Int32(30), den: Int32(1))
        // A header can claim any rate; only a plausible one is passed on as the encoder's rate-control hint.
        if let rate = video.frameRate, rate > 0, rate <= 1000 {
            let capped = min(rate, options.maxFPS ?? rate)
            frameRate = (Int32((capped * 1000).rounded()), 1000)
        }
        return VideoEncoderSettings(
            width: width, height: height, crf: options.crf, bitRate: options.bitrate?.bitsPerSecond,
            preset: options.preset, frameRate: frameRate, x264Params: Self.x264Params)
    }

    /// How the audio is encoded: AAC at `audio_bitrate`, mono or stereo, at the source's rate when AAC takes it.
    func audioEncoding(_ audio: StreamInfo) -> AudioPlan {
        let rate = audio.sampleRate.flatMap { AudioStage.aacSampleRates.contains($0) ? $0 : nil } ?? 48000
        return .encode(
            AudioEncoderSettings(
                bitRate: options.audioBitrate.bitsPerSecond, channels: min(max(audio.channels ?? 2, 1), 2),
                sampleRate: rate))
    }

    /// The coded size that fits the limits in the displayed orientation (`swapped`: a quarter turn), keeping the
    /// aspect ratio, with even sides as 4:2:0 needs; never larger than the source.
    static func fit(width: Int, height: Int, maxWidth: Int?, maxHeight: Int?, swapped: Bool) -> (
        width: Int, height: Int
    ) {
        let (displayWidth, displayHeight) = swapped ? (height, width) : (width, height)
        var scale = 1.0
        if let maxWidth, displayWidth > maxWidth { scale = min(scale, Double(maxWidth) / Double(displayWidth)) }
        if let maxHeight, displayHeight > maxHeight { scale = min(scale, Double(maxHeight) / Double(displayHeight)) }
        if scale >= 1, width % 2 == 0, height % 2 == 0 { return (width, height) }
        func even(_ value: Double) -> Int { max(2, Int((value / 2).rounded(.down)) * 2) }
        return (even(Double(width) * scale), even(Double(height) * scale))
    }
}
