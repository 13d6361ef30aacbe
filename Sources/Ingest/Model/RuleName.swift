import IngestNative

/// The name of a broken rule: reports print it after the stage (`validate.duration.max`, `upload.etag`), CI
/// annotations title with it, and `ingest test` files expect it — so the names are part of the report format.
///
/// A struct with named statics, like swift-system's `Errno`: code sets and compares `.durationMax`, not a string, so a
/// typo is a compile error and every name the tool can print is listed here. Names a pipeline makes up itself (a
/// lookup pattern, an S3 policy condition, a storage-key option) come from the static functions at the end.
public struct RuleName: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    // Reading a file, in any stage.
    public static let unreadable = RuleName("unreadable")
    public static let unsupported = RuleName("unsupported")
    public static let corrupt = RuleName("corrupt")
    public static let unsafe = RuleName("unsafe")
    public static let truncated = RuleName("truncated")
    public static let empty = RuleName("empty")
    public static let changed = RuleName("changed")

    // Walking the input folders.
    public static let symlinkLoop = RuleName("symlink_loop")
    public static let fileName = RuleName("file_name")

    // validate: the checks a pipeline configures.
    public static let extensions = RuleName("extensions")
    public static let containers = RuleName("containers")
    public static let content = RuleName("content")
    public static let minBytes = RuleName("min_bytes")
    public static let maxBytes = RuleName("max_bytes")
    public static let duration = RuleName("duration")
    public static let durationMin = RuleName("duration.min")
    public static let durationMax = RuleName("duration.max")
    public static let maxWidth = RuleName("max_width")
    public static let maxHeight = RuleName("max_height")
    public static let maxPixels = RuleName("max_pixels")
    public static let dimensions = RuleName("dimensions")
    public static let videoCodecs = RuleName("video_codecs")
    public static let audioCodecs = RuleName("audio_codecs")
    public static let require = RuleName("require")

    // Transcoding stages (jpeg, video, audio).
    public static let output = RuleName("output")
    public static let write = RuleName("write")
    public static let encode = RuleName("encode")
    public static let scale = RuleName("scale")
    public static let noVideo = RuleName("no_video")
    public static let noAudio = RuleName("no_audio")
    public static let metadata = RuleName("metadata")

    // Network stages (upload, request, lookup) and what the server answered.
    public static let network = RuleName("network")
    public static let dns = RuleName("dns")
    public static let tls = RuleName("tls")
    public static let refused = RuleName("refused")
    public static let cancelled = RuleName("cancelled")
    public static let timeout = RuleName("timeout")
    public static let status = RuleName("status")
    public static let response = RuleName("response")
    public static let denied = RuleName("denied")
    public static let url = RuleName("url")
    public static let expired = RuleName("expired")
    public static let etag = RuleName("etag")
    public static let checksum = RuleName("checksum")
    public static let verify = RuleName("verify")
    public static let redirect = RuleName("redirect")
    public static let fields = RuleName("fields")
    public static let field = RuleName("field")
    public static let credentials = RuleName("credentials")
    public static let policy = RuleName("policy")
    public static let expiration = RuleName("expiration")
    public static let template = RuleName("template")
    public static let required = RuleName("required")
    public static let csv = RuleName("csv")
    public static let local = RuleName("local")
    /// `poll`: the job ended in a state `fail_when` names.
    public static let failed = RuleName("failed")

    // The run and its journal.
    public static let interrupted = RuleName("interrupted")
    public static let journal = RuleName("journal")
    public static let lease = RuleName("lease")
    public static let maxWorkBytes = RuleName("max_work_bytes")
    public static let error = RuleName("error")

    /// An S3 POST policy condition the form or file breaks (`policy.content-length-range`).
    public static func policy(_ condition: String) -> RuleName { RuleName("policy." + condition) }
    /// A lookup stage's configured pattern check (`patterns.plate`).
    public static func pattern(_ name: String) -> RuleName { RuleName("patterns." + name) }
    /// A storage-key option whose rendered value is unusable (`key`, `prefix`): the rule is the option's name.
    public static func option(_ name: String) -> RuleName { RuleName(name) }
}

extension RuleName {
    /// A failed transcode's rule: the FFmpeg layer's kinds are these rules by name.
    init(_ kind: TranscodeError.Kind) {
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
