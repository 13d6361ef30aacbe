/// The name of a broken rule: reports print it after the stage (`validate.duration.max`, `upload.etag`), CI
/// annotations title with it, and `ingest test` files expect it — so the names are part of the report format.
///
/// A struct with named statics, like swift-system's `Errno`: code sets and compares `.durationMax`, not a string, so a
/// typo is a compile error and every name the tool can print is listed here. Names a pipeline makes up itself (a
/// lookup pattern, an S3 policy condition, a storage-key option) come from the static functions at the end.
public struct RuleName: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The name reports use (`too_large`, `codec`, `changed` …).
    public let rawValue: String
    /// A rule by its report name.
    public init(rawValue: String) { self.rawValue = rawValue }
    init(_ rawValue: String) { self.rawValue = rawValue }
    /// The report name.
    public var description: String { rawValue }

    // Reading a file, in any stage.
    package static let unreadable = RuleName("unreadable")
    package static let unsupported = RuleName("unsupported")
    package static let corrupt = RuleName("corrupt")
    package static let unsafe = RuleName("unsafe")
    package static let truncated = RuleName("truncated")
    package static let empty = RuleName("empty")
    package static let changed = RuleName("changed")

    // Walking the input folders.
    package static let symlinkLoop = RuleName("symlink_loop")
    package static let fileName = RuleName("file_name")

    // validate: the checks a pipeline configures.
    package static let extensions = RuleName("extensions")
    package static let containers = RuleName("containers")
    package static let content = RuleName("content")
    package static let minBytes = RuleName("min_bytes")
    package static let maxBytes = RuleName("max_bytes")
    package static let duration = RuleName("duration")
    package static let durationMin = RuleName("duration.min")
    package static let durationMax = RuleName("duration.max")
    package static let maxWidth = RuleName("max_width")
    package static let maxHeight = RuleName("max_height")
    package static let maxPixels = RuleName("max_pixels")
    package static let dimensions = RuleName("dimensions")
    package static let videoCodecs = RuleName("video_codecs")
    package static let audioCodecs = RuleName("audio_codecs")
    package static let require = RuleName("require")

    // Transcoding stages (jpeg, video, audio).
    package static let output = RuleName("output")
    package static let write = RuleName("write")
    package static let encode = RuleName("encode")
    package static let scale = RuleName("scale")
    package static let noVideo = RuleName("no_video")
    package static let noAudio = RuleName("no_audio")
    package static let metadata = RuleName("metadata")
    /// `fit`: the recording cannot land under the limit even at the smallest picture step (`video.cannot_fit`).
    package static let cannotFit = RuleName("cannot_fit")

    // Network stages (upload, request, lookup) and what the server answered.
    package static let network = RuleName("network")
    package static let dns = RuleName("dns")
    package static let tls = RuleName("tls")
    package static let refused = RuleName("refused")
    package static let cancelled = RuleName("cancelled")
    package static let timeout = RuleName("timeout")
    package static let status = RuleName("status")
    package static let response = RuleName("response")
    package static let denied = RuleName("denied")
    package static let url = RuleName("url")
    package static let expired = RuleName("expired")
    package static let etag = RuleName("etag")
    package static let verify = RuleName("verify")
    /// An "already there" answer (409, Firestore's ALREADY_EXISTS) about something this file did not make.
    package static let conflict = RuleName("conflict")
    package static let redirect = RuleName("redirect")
    package static let fields = RuleName("fields")
    package static let field = RuleName("field")
    package static let credentials = RuleName("credentials")
    package static let policy = RuleName("policy")
    package static let expiration = RuleName("expiration")
    package static let template = RuleName("template")
    package static let required = RuleName("required")
    package static let csv = RuleName("csv")
    package static let local = RuleName("local")
    /// `poll`: the job ended in a state `fail_when` names.
    package static let failed = RuleName("failed")

    // The run and its journal.
    package static let interrupted = RuleName("interrupted")
    package static let journal = RuleName("journal")
    package static let lease = RuleName("lease")
    package static let maxWorkBytes = RuleName("max_work_bytes")
    package static let error = RuleName("error")
    // on_success / on_failure: moving or deleting a file once the journal has it as done.
    package static let move = RuleName("move")
    package static let delete = RuleName("delete")
    /// An upload whose checksum the store returned differs from the one sent (`upload.checksum`).
    package static let checksum = RuleName("checksum")

    /// An S3 POST policy condition the form or file breaks (`policy.content-length-range`).
    package static func policy(_ condition: String) -> RuleName { RuleName("policy." + condition) }
    /// A lookup stage's configured pattern check (`patterns.plate`).
    package static func pattern(_ name: String) -> RuleName { RuleName("patterns." + name) }
    /// A storage-key option whose rendered value is unusable (`key`, `prefix`): the rule is the option's name.
    package static func option(_ name: String) -> RuleName { RuleName(name) }
}
