import Foundation
import IngestCore
import IngestMedia
import NativeFFmpeg
import NativeSystem

/// One stage's share of a pass over a recording's frames: a tap (poster, sheet) or a proxy transcode, and what the
/// stage records once the pass is over.
package struct FramePart {
    /// The stage's name, for failures and the pass's fact.
    let stage: String
    let tap: (any FrameTap)?
    let proxy: ProxyJob?
    /// Writes the stage's output and facts once the pass is done (given its counters).
    let finish: (FramePassCounts) throws -> Void
}

extension FramePart {
    /// A still made from the pass's frames by `tap` (a poster, a sheet): once the pass is over, `make` gives its bytes
    /// (a JPEG or a WebP, as `format` says), what describes it (`{{outputs.NAME.…}}`) and what else the stage's fact
    /// says; the bytes are written to the work folder, recorded as output `name`, and the stage's fact made with the
    /// pass's counts.
    static func still(
        _ item: Item, name: String, format: StillFormat, stage: String, context: StageContext, tap: any FrameTap,
        make: @escaping () throws -> (bytes: [UInt8], details: JSONObject, fact: JSONObject)
    ) -> FramePart {
        let path = ItemOutputs.workPath(
            for: item, stage: stage, fileExtension: format.fileExtension, context: context)
        return FramePart(stage: stage, tap: tap, proxy: nil) { counts in
            let still = try make()
            try FramePass.write(still.bytes, to: path, stage: stage)
            ItemOutputs.record(
                item, name: name, workPath: path, format: format.rawValue, details: still.details, stage: stage)
            var fact = still.details
            fact["output"] = .string(name)
            for (key, value) in still.fact.pairs { fact[key] = value }
            fact["pass"] = FramePass.describe(counts)
            item.facts[context.resultName ?? stage] = .object(fact)
        }
    }
}

/// A proxy made in the pass: one transcode, or a fitted proxy's two passes (and re-encodes), of which one run that
/// decodes every frame feeds the taps.
package struct ProxyJob {
    /// Makes and records the proxy, handing `taps` the decoded frames of one of its runs; returns what all its runs
    /// read and decoded, and whether the taps were fed (false when the proxy only copied the video).
    let make: (_ taps: [any FrameTap]) throws -> (counts: FramePassCounts, tapsFed: Bool)
}

/// One demux and decode of the video stream for every frame-consuming stage given: the first proxy's transcode
/// feeds the taps; without a proxy a decode-only pass does. A second proxy needs a pass of its own (one encoder per
/// pass).
package enum FramePass {
    /// Runs `parts` (the group's stages' shares, in order) over `item`; `open` opens the item's file for a
    /// decode-only pass, failures naming `stage`.
    static func run(
        _ parts: [FramePart], item: Item, context: StageContext,
        open: (_ probe: ProbeResult, _ stage: String) throws -> MediaInput
    ) throws {
        guard let first = parts.first else { return }
        let stage = first.stage
        let before = try context.probe(item, stage: stage)
        let taps = parts.compactMap(\.tap)
        let proxies = parts.compactMap(\.proxy)
        // What the group read and decoded, summed over every pass it made: one pass shows the file once.
        var counts = FramePassCounts()
        var tapsFed = false
        for (index, proxy) in proxies.enumerated() {
            let made = try proxy.make(index == 0 ? taps : [])
            counts.add(made.counts)
            if index == 0 { tapsFed = made.tapsFed }
        }
        // A proxy that copies the video decodes nothing: the taps then get a decode pass of their own.
        if !taps.isEmpty && !tapsFed {
            let input = try open(before, stage)
            counts.add(try decodeOnly(input, probe: before, taps: taps, stage: stage, context: context))
        }
        for part in parts { try part.finish(counts) }
    }

    /// Demux and decode for the taps alone.
    private static func decodeOnly(
        _ input: MediaInput, probe: ProbeResult, taps: [any FrameTap], stage: String, context: StageContext
    ) throws -> FramePassCounts {
        guard let video = probe.videoStreams.first else {
            throw ItemFailed(stage: stage, rule: .noVideo, message: "the file has no video stream")
        }
        do {
            return try FrameDecodePass(
                input: input, stream: video.index, taps: taps, strict: false,
                shouldStop: { context.cancellation?.isCancelled ?? false }
            ).run()
        } catch let error as TranscodeError {
            if error.kind == .interrupted, let cancellation = context.cancellation {
                throw ItemFailed.interrupted(stage: stage, reason: cancellation.reason, during: "the frame pass")
            }
            throw ItemFailed(stage: stage, rule: RuleName(error.kind), message: error.message)
        }
    }

    /// The pass's counters for a stage's fact: one pass shows the same numbers in every stage it served.
    static func describe(_ counts: FramePassCounts) -> JSONValue {
        .object([
            "packets_read": .int(Int64(counts.packetsRead)),
            "video_frames_decoded": .int(Int64(counts.videoFramesDecoded)),
        ])
    }

    /// Writes `bytes` (a poster, a sheet) to `path` in the work folder, atomically.
    static func write(_ bytes: [UInt8], to path: String, stage: String) throws {
        do {
            try StillFile.makeDirectories((path as NSString).deletingLastPathComponent)
            try StillFile.writeAtomically([bytes], to: path)
        } catch {
            throw ItemFailed(stage: stage, rule: .output, message: "cannot write \(path): \(error)")
        }
    }

    /// The video stream a frame stage reads, or the failure naming the stage.
    static func videoStream(_ item: Item, stage: String, context: StageContext) throws -> (ProbeResult, StreamInfo) {
        let probe = try context.probe(item, stage: stage)
        guard let video = probe.videoStreams.first else {
            throw ItemFailed(stage: stage, rule: .noVideo, message: "the file has no video stream")
        }
        return (probe, video)
    }
}

extension FramePassCounts {
    /// Adds another run's reading and decoding: a group's counts sum every pass it made.
    mutating func add(_ other: FramePassCounts) {
        packetsRead += other.packetsRead
        videoFramesDecoded += other.videoFramesDecoded
    }

    /// Adds what one transcode read and decoded.
    mutating func add(_ stats: TranscodeStats) {
        add(FramePassCounts(packetsRead: stats.packetsRead, videoFramesDecoded: stats.videoFramesDecoded))
    }
}
