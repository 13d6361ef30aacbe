import Foundation
import IngestCore
import IngestMedia
import NativeFFmpeg

/// `video` with `output: NAME`: the video made within the stage's limits becomes a named output (a proxy) beside
/// the file instead of replacing it, made in the frame pass it shares with `poster` and `thumbnails`. With `fit:` the
/// proxy is fitted to its limit as the file would be (`runFitted`), and its pass 1 feeds the poster and the sheet.
extension VideoStage {
    package var joinsFramePass: Bool { options.output != nil }

    package func framePart(_ item: Item, context: StageContext) throws -> FramePart? {
        let stage = Self.name
        guard let name = options.output else { return nil }
        if ItemOutputs.deliveredEarlier(item, name: name, context: context) { return nil }
        let before = try context.probe(item, stage: stage)
        let path = ItemOutputs.workPath(
            for: item, stage: stage, fileExtension: options.container.rawValue, context: context)
        var made: JSONObject?
        // Records output `name` (at `written`: the work file, or the item's own file when passed through).
        let record = { (fact: JSONObject, written: String, after: ProbeResult, stats: TranscodeStats) in
            var fact = fact
            fact["decode_errors_skipped"] = .int(Int64(stats.decodeErrors))
            fact["output"] = .string(name)
            ItemOutputs.record(
                item, name: name, workPath: written, format: options.container.rawValue,
                details: ItemOutputs.details(of: after), stage: stage)
            made = fact
        }
        let proxy: ProxyJob
        if let maxBytes = options.fit?.maxBytes.bytes {
            let streams = try streams(of: before)
            proxy = ProxyJob { taps in
                let done = try runFitted(
                    item, before: before, streams: streams, to: path, maxBytes: maxBytes, context: context, taps: taps)
                let fact = fact(done, before: before, hasAudio: streams.audio != nil, path: path)
                record(fact, done.outputPath ?? path, done.after, done.stats)
                return (done.reading, done.tapsFed)
            }
        } else {
            let job = try job(for: before)
            proxy = ProxyJob { taps in
                let timeout = context.settings.probeTimeout
                let input = try MediaStageSupport.openInput(
                    item.artifact, probe: before, stage: stage, timeout: timeout)
                let stats = try MediaStageSupport.transcode(
                    input: input, plan: job.plan(input), outputPath: path, stage: stage, context: context,
                    size: before.size, taps: taps)
                let after = try MediaStageSupport.probeOutput(path, stage: stage, timeout: timeout)
                let fact = fact(
                    copy: job.copy, hasAudio: job.hasAudio, before: before, after: after, stats: stats, path: path)
                record(fact, path, after, stats)
                var reading = FramePassCounts()
                reading.add(stats)
                return (reading, stats.videoFramesDecoded > 0)
            }
        }
        return FramePart(stage: stage, tap: nil, proxy: proxy) { counts in
            guard var fact = made else { return }
            fact["pass"] = FramePass.describe(counts)
            item.facts[context.resultName ?? stage] = .object(fact)
        }
    }
}
