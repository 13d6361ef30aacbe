import Foundation
import IngestCore
import IngestMedia

/// `fit: { max_bytes }` of the `video` and `audio` stages: the output must land at or under `max_bytes`. A recording
/// that already fits and complies passes through; one that does not is encoded at the bit rate its duration allows,
/// checked after encoding and encoded again lower on an overshoot; one that cannot fit fails `cannot_fit`.
package struct FitOptions: StageOptions, Sendable, Equatable {
    package var maxBytes = ByteSize(bytes: 0)
    package init() {}

    package static var fields: [OptionField<FitOptions>] {
        [
            OptionField(
                "max_bytes", \.maxBytes, range: ByteSize(bytes: 1024)...ByteSize.maximum,
                doc: "Largest output (`100MB`, `25MiB`); the output is checked against it after encoding.",
                required: true)
        ]
    }
}

extension ItemFailed {
    /// A recording the limit cannot hold: the duration, the limit and the bit rate it would need.
    static func cannotFit(stage: String, _ shortfall: FitShortfall) -> ItemFailed {
        ItemFailed(
            stage: stage, rule: .cannotFit, message: shortfall.message,
            expected: "≥ \(FitPlanner.formatRate(shortfall.neededBitRate)) within \(shortfall.maxBytes) bytes",
            actual:
                "\(FitPlanner.formatRate(shortfall.availableBitRate)) over \(String(format: "%.1f", shortfall.duration)) s"
        )
    }

    /// Encoded `attempts` times and still over: never sent oversize.
    static func stillTooLarge(stage: String, bytes: Int64, maxBytes: Int64, attempts: Int) -> ItemFailed {
        ItemFailed(
            stage: stage, rule: .cannotFit,
            message: "encoded \(attempts) times and still \(bytes) bytes, over the limit of \(maxBytes) bytes",
            expected: "≤ \(maxBytes) bytes", actual: "\(bytes) bytes")
    }
}
