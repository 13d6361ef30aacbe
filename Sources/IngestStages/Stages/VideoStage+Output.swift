import Foundation
import IngestCore

/// `video` with `output: NAME`: the video made within the stage's limits becomes a named output (a proxy) beside
/// the file instead of replacing it, made in the frame pass it shares with `poster` and `thumbnails`.
extension VideoStage {
    package var joinsFramePass: Bool { options.output != nil }

    package func framePart(_ item: Item, context: StageContext) throws -> FramePart? {
        let stage = Self.name
        guard let name = options.output else { return nil }
        if ItemOutputs.deliveredEarlier(item, name: name, context: context) { return nil }
        let before = try context.probe(item, stage: stage)
        let job = try job(for: before)
        let path = ItemOutputs.workPath(
            for: item, stage: stage, fileExtension: options.container.rawValue, context: context)
        var made: JSONObject?
        let proxy = ProxyJob(outputPath: path, plan: job.plan) { stats, after in
            var fact = fact(job, before: before, after: after, stats: stats, path: path)
            fact["decode_errors_skipped"] = .int(Int64(stats.decodeErrors))
            fact["output"] = .string(name)
            ItemOutputs.record(
                item, name: name, workPath: path, format: options.container.rawValue,
                details: ItemOutputs.details(of: after),
                stage: stage)
            made = fact
        }
        return FramePart(stage: stage, tap: nil, proxy: proxy) { counts in
            guard var fact = made else { return }
            fact["pass"] = FramePass.describe(counts)
            item.facts[context.resultName ?? stage] = .object(fact)
        }
    }
}
