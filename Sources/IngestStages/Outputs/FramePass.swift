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

/// A proxy made in the pass: the transcode plan for the opened input, written to `outputPath`.
package struct ProxyJob {
    let outputPath: String
    let plan: (MediaInput) -> TranscodePlan
    /// Records the proxy from what the transcode did and the written file's probe.
    let done: (TranscodeStats, ProbeResult) throws -> Void
}

/// A stage that makes a named output from the recording's frames (`poster`, `thumbnails`, `video` with `output:`).
/// Consecutive ones share one demux and decode pass: the runner gives them to `FramePass.run` together.
package protocol FramePassStage: Stage {
    /// False when this stage does not make an output beside the file (a `video` that replaces it).
    var joinsFramePass: Bool { get }
    /// The stage's part of the pass for `item`; nil when there is nothing to make (its output was delivered by an
    /// earlier run).
    func framePart(_ item: Item, context: StageContext) throws -> FramePart?
}

extension FramePassStage {
    /// Run alone, the stage is a pass of its own.
    func runAlone(_ item: Item, context: StageContext) throws -> StageOutcome {
        try FramePass.run([(self, context)], item: item)
        return .proceed
    }
}

/// One demux and decode of the video stream for every frame-consuming stage given: the first proxy's transcode
/// feeds the taps; without a proxy a decode-only pass does. A second proxy needs a pass of its own (one encoder per
/// pass).
package enum FramePass {
    package static func run(_ members: [(stage: any FramePassStage, context: StageContext)], item: Item) throws {
        guard let (_, context) = members.first else { return }
        let parts = try members.compactMap { try $0.stage.framePart(item, context: $0.context) }
        guard let first = parts.first else { return }
        let stage = first.stage
        let before = try context.probe(item, stage: stage)
        let taps = parts.compactMap(\.tap)
        let proxies = parts.compactMap(\.proxy)
        // What the group read and decoded, summed over every pass it made: one pass shows the file once.
        var counts = FramePassCounts()
        var tapsFed = false
        for (index, proxy) in proxies.enumerated() {
            let shared = index == 0 ? taps : []
            let input = try MediaStageSupport.openInput(
                item.artifact, probe: before, stage: stage, timeout: context.settings.probeTimeout)
            let stats = try MediaStageSupport.transcode(
                input: input, plan: proxy.plan(input), outputPath: proxy.outputPath, stage: stage, context: context,
                size: before.size, taps: shared)
            counts.packetsRead += stats.packetsRead
            counts.videoFramesDecoded += stats.videoFramesDecoded
            if index == 0 { tapsFed = stats.videoFramesDecoded > 0 }
            try proxy.done(
                stats,
                try MediaStageSupport.probeOutput(
                    proxy.outputPath, stage: stage, timeout: context.settings.probeTimeout))
        }
        // A proxy that copies the video decodes nothing: the taps then get a decode pass of their own.
        if !taps.isEmpty && !tapsFed {
            let decoded = try decodeOnly(item, probe: before, taps: taps, stage: stage, context: context)
            counts.packetsRead += decoded.packetsRead
            counts.videoFramesDecoded += decoded.videoFramesDecoded
        }
        for part in parts { try part.finish(counts) }
    }

    /// Demux and decode for the taps alone.
    private static func decodeOnly(
        _ item: Item, probe: ProbeResult, taps: [any FrameTap], stage: String, context: StageContext
    ) throws -> FramePassCounts {
        guard let video = probe.videoStreams.first else {
            throw ItemFailed(stage: stage, rule: .noVideo, message: "the file has no video stream")
        }
        let input = try MediaStageSupport.openInput(
            item.artifact, probe: probe, stage: stage, timeout: context.settings.probeTimeout)
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
