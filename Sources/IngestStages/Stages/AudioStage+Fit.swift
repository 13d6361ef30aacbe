import Foundation
import IngestCore
import IngestMedia
import NativeFFmpeg

/// `audio: { fit: { max_bytes } }`: an audio-only recording lands at or under the limit. AAC's bit rate is nearly
/// constant, so one encode at the rate the duration allows usually lands; the output is still measured before it is
/// kept and an overshoot is encoded again lower, at most `FitPlanner.maxAttempts` times.
extension AudioStage {
    /// `bitrate`, or the lower rate the limit holds over the recording's duration; `cannot_fit` below the floor.
    func fittedBitRate(_ before: ProbeResult, _ source: StreamInfo, maxBytes: Int64) throws -> Int {
        guard let duration = before.duration, duration > 0, duration.isFinite else {
            throw ItemFailed(
                stage: Self.name, rule: .cannotFit,
                message: "the container states no duration, so no bit rate can be planned for the limit")
        }
        do throws(FitShortfall) {
            return try FitPlanner.audioBitRate(
                wanted: options.bitrate.bitsPerSecond, channels: options.channels, sampleRate: options.sampleRate,
                duration: duration, maxBytes: maxBytes)
        } catch {
            throw ItemFailed.cannotFit(stage: Self.name, error)
        }
    }

    /// Encodes (or, `copy`, remuxes) until the output is at or under `maxBytes`; the `fit` fact says how.
    func encodeUnder(
        _ maxBytes: Int64, _ item: Item, _ before: ProbeResult, outputPath: String, settings: AudioEncoderSettings,
        copy: Bool, context: StageContext, plan makePlan: (MediaInput, AudioPlan) -> TranscodePlan
    ) throws -> (stats: TranscodeStats, after: ProbeResult, fact: JSONObject) {
        var settings = settings
        var attempts: [JSONValue] = []
        var copying = copy
        var lastBytes = before.size
        while attempts.count < FitPlanner.maxAttempts {
            let current = settings
            let run = try MediaStageSupport.transcodeOnce(
                item, before, Self.name, outputPath, context, maxBytes: maxBytes
            ) {
                makePlan($0, copying ? .copy : .encode(current))
            }
            attempts.append(.object(["bit_rate": .int(Int64(current.bitRate)), "bytes": .int(run.bytes)]))
            lastBytes = run.bytes
            if run.kept {
                let after = try MediaStageSupport.probeOutput(
                    outputPath, stage: Self.name, timeout: context.settings.probeTimeout)
                let fact: JSONObject = [
                    "max_bytes": .int(maxBytes), "action": .string(copying ? "passed through" : "encoded"),
                    "bit_rate": .int(Int64(current.bitRate)), "attempts": .array(attempts), "bytes": .int(run.bytes),
                ]
                return (run.stats, after, fact)
            }
            if !copying {
                settings.bitRate = FitPlanner.retryBitRate(
                    previous: current.bitRate, actualBytes: run.bytes, maxBytes: maxBytes,
                    duration: before.duration ?? 1)
            }
            copying = false
            context.logger?.info("audio: fit: \(run.bytes) bytes is over \(maxBytes); encoding at \(settings.bitRate)")
        }
        throw ItemFailed.stillTooLarge(stage: Self.name, bytes: lastBytes, maxBytes: maxBytes, attempts: attempts.count)
    }
}
