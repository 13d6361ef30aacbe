import IngestCore

extension RuleName {
    /// A failed transcode's rule: the transcoder's kinds are these rules by name.
    package init(_ kind: TranscodeError.Kind) {
        switch kind {
        case .unsupported: self = .unsupported
        case .corrupt: self = .corrupt
        case .empty: self = .empty
        case .encode: self = .encode
        case .output: self = .output
        case .interrupted: self = .interrupted
        }
    }
}
