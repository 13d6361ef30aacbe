import Foundation
import IngestCore
import IngestMedia
import IngestTemplates
import NativeFFmpeg

/// `audio`: turns any supported audio (AAC/M4A, MP3, WAV, FLAC, Ogg, the audio track of a movie) into AAC in an
/// `.m4a` with the moov atom first, as the vet-visit backend (seed 003) expects from an iPhone recording. A file that
/// already meets every setting is passed through untouched: re-encoding AAC only loses quality.
package struct AudioStage: Stage {
    package struct Options: StageOptions, Sendable {
        package var bitrate = BitRate(bitsPerSecond: 64000)
        package var channels = 1
        package var sampleRate = 44100
        package var onDecodeError = DecodeErrorPolicy.fail
        package var fit: FitOptions?
        /// A named output made beside the file instead of replacing it.
        package var output: String?
        package init() {}

        package static var fields: [OptionField<Options>] {
            [
                OptionField(
                    "bitrate", \.bitrate, range: BitRate(bitsPerSecond: 8000)...BitRate(bitsPerSecond: 512_000),
                    doc: "AAC bit rate (`64k`, `96000`).", default: "64k"),
                OptionField(
                    "channels", \.channels, range: 1...2, doc: "Output channels (1 = mono, 2 = stereo).", default: "1"),
                OptionField(
                    "sample_rate", \.sampleRate, doc: "Output sample rate in Hz (an AAC rate: 8000…96000).",
                    default: "44100"),
                OptionField(
                    "on_decode_error", \.onDecodeError,
                    doc: "`fail` the file on a damaged packet, or `skip` it and count it in the fact.",
                    default: "fail"),
                OptionField(
                    "fit", \.fit,
                    doc:
                        "`{max_bytes: 25MB}`: land the .m4a at or under the limit — passed through when it fits, else `bitrate` or, when the duration needs it, the lower rate the limit allows; `cannot_fit` below 16 kbit/s per channel.",
                    default: "none"),
                OptionField(
                    "output", \.output,
                    doc: "Make the audio as a named output beside the file instead of replacing the file.",
                    default: "none (the audio replaces the file)"),
            ]
        }

        package func validate(at node: ConfigNode) throws {
            if let output { try OutputName.check(output, at: node) }
            if !(1...2).contains(channels) { throw node.error("channels must be 1 or 2, found \(channels)") }
            if !AudioStage.aacSampleRates.contains(sampleRate) {
                throw node.error(
                    "sample_rate must be one AAC supports (\(AudioStage.aacSampleRates.map(String.init).joined(separator: ", "))), found \(sampleRate)"
                )
            }
            if !(8000...512_000).contains(bitrate.bitsPerSecond) {
                throw node.error("bitrate must be 8k…512k, found \(bitrate)")
            }
        }
    }

    package static let name = "audio"
    package static let templateOffer: TemplateOffer? = TemplateOffer(name: name, fields: nil)
    package static let summary =
        "Transcodes audio (M4A, MP3, WAV, FLAC, a movie's track) to AAC in a faststart .m4a; passes compliant files through."
    package static let writesWorkFiles = true

    /// Sample rates libavcodec's `aac` encoder takes.
    static let aacSampleRates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000]
    /// How far above the requested bit rate an AAC file may be and still pass through. Below it always may: a
    /// re-encode at a higher rate cannot restore what the lower one dropped.
    static let bitRateTolerance = 0.15

    let options: Options
    package init(options: Options) throws { self.options = options }

    package func run(_ item: Item, context: StageContext) throws -> StageOutcome {
        let stage = Self.name
        if let name = options.output, ItemOutputs.deliveredEarlier(item, name: name, context: context) {
            return .proceed
        }
        let before = try context.probe(item, stage: stage)
        let source = try audioSource(of: before)

        var fact = JSONObject()
        // With `fit`, the rate is the configured one or, when the limit cannot hold that, the one it can.
        let limit = options.fit?.maxBytes.bytes
        let bitRate = try limit.map { try fittedBitRate(before, source, maxBytes: $0) } ?? options.bitrate.bitsPerSecond
        fact["bitrate"] = .int(Int64(bitRate))
        fact["channels"] = .int(Int64(options.channels))
        fact["sample_rate"] = .int(Int64(options.sampleRate))
        fact["before"] = MediaStageSupport.describe(before)

        let compliant = complianceProblems(before, source, bitRate: bitRate, maxBytes: limit).isEmpty
        let moovFirst = compliant ? AtomOrder.moovFirst(item.artifact) : nil
        if compliant, moovFirst == true {
            fact["action"] = .string("passed_through")
            fact["reason"] = .string("already AAC \(options.channels) ch \(options.sampleRate) Hz, faststart .m4a")
            fact["path"] = .string(item.artifact)
            fact["after"] = fact["before"]
            if let limit {
                fact["fit"] = ["max_bytes": .int(limit), "action": "passed through", "bytes": .int(before.size)]
            }
            item.facts[context.resultName ?? stage] = .object(fact)
            if let name = options.output {
                ItemOutputs.finishMedia(
                    item, name: name, path: item.artifact, probe: before, fact: fact, stage: stage, context: context)
            }
            return .proceed
        }

        let outputPath = try MediaStageSupport.outputPath(
            for: item, fileExtension: "m4a", stage: stage, context: context)
        let settings = AudioEncoderSettings(
            bitRate: bitRate, channels: options.channels, sampleRate: options.sampleRate)
        // Compliant but with the moov atom at the end: a stream copy with faststart fixes that without re-encoding.
        let makePlan = { (input: MediaInput, plan: AudioPlan) in
            TranscodePlan(
                container: .m4a, faststart: true, audio: (source.index, plan),
                skipDecodeErrors: options.onDecodeError == .skip, metadata: MediaStageSupport.carriedMetadata(input))
        }
        let stats: TranscodeStats
        let after: ProbeResult
        if let limit {
            let fitted = try encodeUnder(
                limit, item, before, outputPath: outputPath, settings: settings, copy: compliant, context: context,
                plan: makePlan)
            (stats, after) = (fitted.stats, fitted.after)
            fact["fit"] = .object(fitted.fact)
        } else {
            (stats, after) = try MediaStageSupport.transcode(
                item, probe: before, to: outputPath, stage: stage, context: context
            ) { input in makePlan(input, compliant ? .copy : .encode(settings)) }
        }
        fact["action"] = .string(compliant ? "remuxed" : "transcoded")
        if compliant {
            fact["reason"] = .string("already compliant AAC; moved the moov atom first without re-encoding")
        }
        fact["path"] = .string(outputPath)
        fact["after"] = MediaStageSupport.describe(after)
        if let name = options.output {
            fact["decode_errors_skipped"] = .int(Int64(stats.decodeErrors))
            ItemOutputs.finishMedia(
                item, name: name, path: outputPath, probe: after, fact: fact, stage: stage, context: context)
            return .proceed
        }
        MediaStageSupport.finish(
            item, with: outputPath, probe: after, stats: stats, fact: fact, stage: stage, context: context)
        return .proceed
    }

    /// The audio stream to encode; fails a file that is not audio, has none, or has zero duration.
    func audioSource(of before: ProbeResult) throws -> StreamInfo {
        let stage = Self.name
        guard before.content.isTimedMedia, before.content != .gif, before.content != .webp else {
            throw ItemFailed(
                stage: stage, rule: .unsupported, message: "content is \(before.content.displayName), not audio",
                expected: "M4A, MP4, MOV, MKV, MP3, WAV, FLAC, AAC or Ogg", actual: before.content.displayName)
        }
        guard let source = before.audioStreams.first else {
            throw ItemFailed(
                stage: stage, rule: .noAudio, message: "the file has no audio stream", expected: "an audio stream",
                actual: before.streams.map(\.codecType).joined(separator: ", "))
        }
        if let duration = before.duration, duration <= 0 {
            throw ItemFailed(
                stage: stage, rule: .empty, message: "the audio has zero duration", expected: "> 0 s",
                actual: "\(duration) s")
        }
        return source
    }

    /// What keeps the file from passing through as it is; empty when it already meets every setting.
    func complianceProblems(_ probe: ProbeResult, _ audio: StreamInfo, bitRate: Int, maxBytes: Int64?) -> [String] {
        var problems: [String] = []
        if let maxBytes, probe.size > maxBytes { problems.append("\(probe.size) bytes, over \(maxBytes)") }
        if ![.m4a, .mp4].contains(probe.content) { problems.append("container is \(probe.content.displayName)") }
        if !probe.videoStreams.isEmpty { problems.append("has a video stream") }
        if probe.audioStreams.count != 1 { problems.append("has \(probe.audioStreams.count) audio streams") }
        if audio.codecName != "aac" { problems.append("codec is \(audio.codecName ?? "unknown")") }
        if audio.channels != options.channels { problems.append("channels \(audio.channels ?? 0)") }
        if audio.sampleRate != options.sampleRate { problems.append("sample rate \(audio.sampleRate ?? 0)") }
        let rate = audio.bitRate ?? probe.bitRate
        if rate.map({ Double($0) > Double(bitRate) * (1 + Self.bitRateTolerance) }) ?? true {
            problems.append("bit rate \(rate.map(String.init) ?? "unknown")")
        }
        return problems
    }
}
