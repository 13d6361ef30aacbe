import Foundation
import IngestCore
import IngestMedia
import NativeFFmpeg
import NativeSystem

/// A bit rate written as FFmpeg's CLI takes it: `64000`, `64k`, `1.5M` (k = 1000, M = 10⁶; `bps`/`b` allowed).
package struct BitRate: OptionValue, Equatable, Comparable, Sendable, CustomStringConvertible {
    /// Bits per second.
    package var bitsPerSecond: Int
    package init(bitsPerSecond: Int) { self.bitsPerSecond = bitsPerSecond }

    package static func parse(_ text: String) -> BitRate? {
        var trimmed = text.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "_", with: "")
        for suffix in ["bps", "b/s", "b"] where trimmed.lowercased().hasSuffix(suffix) {
            trimmed = String(trimmed.dropLast(suffix.count))
            break
        }
        var factor = 1.0
        if let last = trimmed.last, "kKmM".contains(last) {
            factor = last == "k" || last == "K" ? 1e3 : 1e6
            trimmed.removeLast()
        }
        guard let value = Double(trimmed.trimmingCharacters(in: .whitespaces)), value.isFinite, value > 0,
            value * factor >= 1, value * factor < 1e10
        else { return nil }
        return BitRate(bitsPerSecond: Int((value * factor).rounded()))
    }

    package init(from node: ConfigNode) throws {
        guard let text = node.scalar, let rate = BitRate.parse(text) else {
            throw node.error("expected a bit rate such as 64k, 2.5M or 128000, found \(node.kindDescription)")
        }
        self = rate
    }

    package static var jsonSchema: JSONValue {
        [
            "anyOf": [
                ["type": "integer", "minimum": 1],
                ["type": "string", "pattern": "^\\s*[0-9_]+(\\.[0-9]+)?\\s*[kKmM]?(bps|b/s|b)?\\s*$"],
            ]
        ]
    }

    package static func < (lhs: BitRate, rhs: BitRate) -> Bool { lhs.bitsPerSecond < rhs.bitsPerSecond }

    package var description: String {
        bitsPerSecond % 1_000_000 == 0
            ? "\(bitsPerSecond / 1_000_000)M"
            : bitsPerSecond % 1000 == 0 ? "\(bitsPerSecond / 1000)k" : "\(bitsPerSecond)"
    }
}

/// `on_decode_error`: what a damaged packet does to the file.
package enum DecodeErrorPolicy: String, OptionEnum, Sendable {
    /// The file fails with the decoder's message.
    case fail
    /// The packet is dropped and counted in the fact; the rest is transcoded.
    case skip
}

/// What the audio and video stages share: the input open, the temp-file-then-rename run, facts, errors.
enum MediaStageSupport {
    /// Opens the probed file for packet reading through the same guarded opener as the probe.
    static func openInput(_ path: String, probe: ProbeResult, stage: String, timeout: Double) throws -> MediaInput {
        guard let demuxer = Prober.demuxer(for: probe.content) else {
            throw ItemFailed(stage: stage, rule: .unsupported, message: "no demuxer for \(probe.content.displayName)")
        }
        do {
            return try MediaInput(
                path: path, demuxer: demuxer,
                limits: MediaInputLimits(
                    timeout: timeout, probeSize: 1 << 20, analyzeDuration: 1,
                    streamInfo: demuxer == .mov ? .whenIncomplete : .always))
        } catch let error as MediaInputError {
            let probeError = Prober.probeError(error, timeout: timeout)
            throw ItemFailed(stage: stage, rule: probeError.rule, message: probeError.message)
        }
    }

    /// Where the stage writes the item's new file in the work folder; never the file it reads.
    static func outputPath(for item: Item, fileExtension: String, stage: String, context: StageContext) throws
        -> String
    {
        let outputPath = WorkFolder.outputPath(
            for: item, workDirectory: context.settings.workDirectory, stage: context.workFolderName(for: stage),
            fileExtension: fileExtension)
        guard outputPath != item.artifact, outputPath != item.path else {
            throw ItemFailed(stage: stage, rule: .output, message: "the output path is the input: \(outputPath)")
        }
        return outputPath
    }

    /// Opens the item's artifact, runs the plan `makePlan` builds for that input into `outputPath`, and probes what
    /// was written.
    static func transcode(
        _ item: Item, probe before: ProbeResult, to outputPath: String, stage: String, context: StageContext,
        plan makePlan: (MediaInput) -> TranscodePlan
    ) throws -> (stats: TranscodeStats, after: ProbeResult) {
        let timeout = context.settings.probeTimeout
        let input = try openInput(item.artifact, probe: before, stage: stage, timeout: timeout)
        let stats = try transcode(
            input: input, plan: makePlan(input), outputPath: outputPath, stage: stage, context: context,
            size: before.size)
        return (stats, try probeOutput(outputPath, stage: stage, timeout: timeout))
    }

    /// Makes the written file the item's artifact, with its probe, and records the stage's fact with the decode
    /// errors skipped.
    static func finish(
        _ item: Item, with outputPath: String, probe after: ProbeResult, stats: TranscodeStats, fact: JSONObject,
        stage: String, context: StageContext
    ) {
        var fact = fact
        fact["decode_errors_skipped"] = .int(Int64(stats.decodeErrors))
        if let first = stats.firstDecodeError { fact["first_decode_error"] = .string(first) }
        WorkFolder.replaceArtifact(of: item, with: outputPath, workDirectory: context.settings.workDirectory)
        item.probeResult = after
        item.facts[context.resultName ?? stage] = .object(fact)
    }

    /// Runs `plan` into a temp file beside `outputPath` and renames it into place; on any failure the temp file is
    /// gone and nothing exists at `outputPath` from this run.
    static func transcode(
        input: MediaInput, plan: TranscodePlan, outputPath: String, stage: String, context: StageContext, size: Int64,
        taps: [any FrameTap] = []
    ) throws -> TranscodeStats {
        try transcodeToTemporary(
            input: input, plan: plan, outputPath: outputPath, stage: stage, context: context,
            progress: { context.reportProgress(done: $0, total: size) }, taps: taps, keep: { try $0.commit() }
        ).stats
    }

    /// Runs `plan` into a temp file beside `outputPath` and hands it to `keep`, which commits it or not (an
    /// uncommitted temp file is removed when it goes); transcoder and file errors become the stage's failures.
    static func transcodeToTemporary(
        input: MediaInput, plan: TranscodePlan, outputPath: String, stage: String, context: StageContext,
        progress: @escaping (Int64) -> Void, taps: [any FrameTap] = [], keep: (TemporaryOutputFile) throws -> Void
    ) throws -> (stats: TranscodeStats, bytes: Int64) {
        do {
            try StillFile.makeDirectories((outputPath as NSString).deletingLastPathComponent)
            let temporary = try TemporaryOutputFile(finalPath: outputPath)
            let transcoder = MediaTranscoder(
                input: input, plan: plan, progress: progress, shouldStop: { context.cancellation?.isCancelled ?? false })
            transcoder.frameTaps = taps
            let stats = try transcoder.run(to: temporary.temporaryPath)
            // Measured before `keep`, which may rename it: what was written, not what a path later holds.
            let bytes = try FileStatus(path: temporary.temporaryPath, followLinks: true).size
            try keep(temporary)
            return (stats, bytes)
        } catch let error as TranscodeError {
            if error.kind == .interrupted, let cancellation = context.cancellation {
                // The unfinished output is a temp file, removed with `temporary`.
                throw ItemFailed.interrupted(stage: stage, reason: cancellation.reason, during: "the transcode")
            }
            throw ItemFailed(stage: stage, rule: RuleName(error.kind), message: error.message)
        } catch let error as SystemError {
            throw ItemFailed(
                stage: stage, rule: .output,
                message: "cannot write \(outputPath): \(error.call)(\(error.path)): \(error.message)")
        }
    }

    /// Container metadata worth carrying over (creation_time, location, title …); the muxer writes its own brand
    /// and encoder tags.
    static func carriedMetadata(_ input: MediaInput) -> [String: String] {
        input.metadata.filter { !["major_brand", "minor_version", "compatible_brands", "encoder"].contains($0.key) }
    }

    /// The before/after summary of one file for the fact: size, duration, codecs, dimensions, audio shape.
    static func describe(_ probe: ProbeResult) -> JSONValue {
        var object = JSONObject()
        object["bytes"] = .int(probe.size)
        if let duration = probe.duration { object["duration"] = .double((duration * 1000).rounded() / 1000) }
        object["format"] = .string(probe.content.rawValue)
        if let video = probe.videoStreams.first {
            if let codec = video.codecName { object["video_codec"] = .string(codec) }
            if let width = video.width, let height = video.height {
                object["width"] = .int(Int64(width))
                object["height"] = .int(Int64(height))
            }
            if let rotation = video.rotation, rotation != 0 { object["rotation"] = .double(rotation) }
            if let rate = video.frameRate { object["frame_rate"] = .double((rate * 1000).rounded() / 1000) }
        }
        if let audio = probe.audioStreams.first {
            if let codec = audio.codecName { object["audio_codec"] = .string(codec) }
            if let channels = audio.channels { object["channels"] = .int(Int64(channels)) }
            if let rate = audio.sampleRate { object["sample_rate"] = .int(Int64(rate)) }
            if let bitRate = audio.bitRate { object["audio_bit_rate"] = .int(bitRate) }
        }
        if let creation = probe.creationTime { object["creation_time"] = .string(creation) }
        return .object(object)
    }

    /// The output's probe for the fact; a failure here is the transcoder's, so it is reported as `output`.
    static func probeOutput(_ path: String, stage: String, timeout: Double) throws -> ProbeResult {
        do {
            return try Prober.probe(path: path, timeout: timeout)
        } catch let error as ProbeError {
            throw ItemFailed(stage: stage, rule: .output, message: "the written file does not probe: \(error.message)")
        }
    }
}

/// The order of the top-level boxes of an ISO BMFF / QuickTime file, read from their 8- or 16-byte headers with
/// seeks in between (never the payloads): `faststart` means `moov` comes before `mdat`.
enum AtomOrder {
    /// Top-level box types in file order; nil when the file cannot be read as boxes.
    static func topLevelTypes(_ path: String, limit: Int = 64) -> [String]? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let end = try? handle.seekToEnd() else { return nil }
        var offset: UInt64 = 0
        var types: [String] = []
        while offset + 8 <= end, types.count < limit {
            guard (try? handle.seek(toOffset: offset)) != nil, let header = try? handle.read(upToCount: 16),
                header.count >= 8
            else { return nil }
            let bytes = [UInt8](header)
            var size = bytes[0..<4].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let type = String(decoding: bytes[4..<8], as: UTF8.self)
            if size == 1 {
                guard bytes.count >= 16 else { return nil }
                size = bytes[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            } else if size == 0 {
                size = end - offset
            }
            guard size >= 8 else { return nil }
            types.append(type)
            // A box claiming to run past the end (a truncated file) is the last one; no overflow on a huge size.
            guard size < end - offset else { break }
            offset += size
        }
        return types
    }

    /// True when `moov` precedes `mdat` (or there is no `mdat`); false when it follows; nil when unreadable.
    static func moovFirst(_ path: String) -> Bool? {
        guard let types = topLevelTypes(path), let moov = types.firstIndex(of: "moov") else { return nil }
        guard let mdat = types.firstIndex(of: "mdat") else { return true }
        return moov < mdat
    }
}

/// Bit rates: up to 10 Gbit/s, which `BitRate.parse` already holds to.
extension BitRate: RangedOptionValue {
    package static var defaultRange: ClosedRange<BitRate> {
        BitRate(bitsPerSecond: 1)...BitRate(bitsPerSecond: 9_999_999_999)
    }
    package var rangeText: String { description }
    package static func jsonSchema(in range: ClosedRange<BitRate>) -> JSONValue { jsonSchema }
}
