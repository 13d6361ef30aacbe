import Foundation
import IngestCore
import IngestMedia
import NativeFFmpeg
import NativeSystem

extension MediaStageSupport {
    /// One transcode of the item into a temp file beside `outputPath`, kept (renamed into place) only when it is at
    /// or under `maxBytes` (nil: never kept, a pass 1). `progressShare` (index, count) maps this run's progress
    /// into its part of the whole.
    static func transcodeOnce(
        _ item: Item, _ before: ProbeResult, _ stage: String, _ outputPath: String, _ context: StageContext,
        maxBytes: Int64?,
        progressShare: (Int64, Int64) = (0, 1), plan makePlan: (MediaInput) -> TranscodePlan
    ) throws -> (stats: TranscodeStats, bytes: Int64, kept: Bool) {
        let input = try MediaStageSupport.openInput(
            item.artifact, probe: before, stage: stage, timeout: context.settings.probeTimeout)
        let size = max(before.size, 1)
        var kept = false
        let (stats, bytes) = try MediaStageSupport.transcodeToTemporary(
            input: input, plan: makePlan(input), outputPath: outputPath, stage: stage, context: context,
            progress: { context.reportProgress(done: (progressShare.0 * size + $0) / progressShare.1, total: size) }
        ) { temporary in
            guard let maxBytes, let written = try? FileStatus(path: temporary.temporaryPath, followLinks: true).size,
                written <= maxBytes
            else { return }
            try temporary.commit()
            kept = true
        }
        return (stats, bytes, kept)
    }

}
