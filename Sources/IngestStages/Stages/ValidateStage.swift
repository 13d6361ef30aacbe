import Foundation
import IngestCore
import IngestMedia
import NativeSystem

/// `validate`: the local rules a file must meet before anything is spent on it. Every rule that fails is
/// reported (not only the first), each with expected vs. actual, so one run tells the whole story of a file.
package struct ValidateStage: Stage {
    package struct DurationLimits: StageOptions, Sendable {
        package var min: DurationValue?
        package var max: DurationValue?
        package init() {}
        package static var fields: [OptionField<DurationLimits>] {
            [
                OptionField("min", \.min, doc: "Shortest allowed duration (`1s`, `0.5`)."),
                OptionField("max", \.max, doc: "Longest allowed duration (`3600s`, `1h`)."),
            ]
        }
        package func validate(at node: ConfigNode) throws {
            if let min, let max, min > max {
                throw node.error("duration.min (\(min)) is greater than duration.max (\(max))")
            }
        }
    }

    package enum Requirement: String, OptionEnum, Sendable {
        case audio, video, location
    }

    package struct Options: StageOptions, Sendable {
        package var extensions: [String]?
        package var sniff = true
        package var minBytes: ByteSize?
        package var maxBytes: ByteSize?
        package var duration: DurationLimits?
        package var containers: [String]?
        package var videoCodecs: [String]?
        package var audioCodecs: [String]?
        package var maxWidth: Int?
        package var maxHeight: Int?
        package var maxPixels: Int?
        package var require: [Requirement] = []
        package init() {}

        package static var fields: [OptionField<Options>] {
            [
                OptionField("extensions", \.extensions, doc: "Allowed file extensions, without the dot, any case."),
                OptionField(
                    "sniff", \.sniff, doc: "Check the content's magic bytes against the extension.", default: "true"),
                OptionField("min_bytes", \.minBytes, doc: "Smallest allowed size (`1KB`, `1024`)."),
                OptionField("max_bytes", \.maxBytes, doc: "Largest allowed size (`100MB`, `100MiB`)."),
                OptionField(
                    "duration", \.duration,
                    doc: "Allowed duration `{min, max}`, read from the container (never a full decode)."),
                OptionField(
                    "containers", \.containers,
                    doc:
                        "Allowed containers: FFmpeg demuxer names (`mov`, `mp4`, `m4a`, `matroska`, `wav`, `mp3`) or content kinds (`quicktime`, `jpeg`, `png`, `heif`)."
                ),
                OptionField(
                    "video_codecs", \.videoCodecs, doc: "Allowed video codecs, ffprobe names (`h264`, `hevc`)."),
                OptionField("audio_codecs", \.audioCodecs, doc: "Allowed audio codecs, ffprobe names (`aac`, `mp3`)."),
                OptionField(
                    "max_width", \.maxWidth, range: 1...Int(Int32.max),
                    doc: "Largest displayed width in pixels (rotation applied)."),
                OptionField(
                    "max_height", \.maxHeight, range: 1...Int(Int32.max),
                    doc: "Largest displayed height in pixels (rotation applied)."),
                OptionField("max_pixels", \.maxPixels, range: 1...Int(Int32.max), doc: "Largest width × height."),
                OptionField(
                    "require", \.require, doc: "Streams or facts the file must have: `audio`, `video`, `location`.",
                    default: "[]"),
            ]
        }

        package func validate(at node: ConfigNode) throws {
            if let minBytes, let maxBytes, minBytes > maxBytes {
                throw node.error("min_bytes (\(minBytes)) is greater than max_bytes (\(maxBytes))")
            }
            for (name, value) in [("max_width", maxWidth), ("max_height", maxHeight), ("max_pixels", maxPixels)] {
                if let value, value <= 0 { throw node.error("\(name) must be positive, found \(value)") }
            }
        }

        /// True when a rule needs the container opened (anything beyond name, size and magic bytes).
        var needsProbe: Bool {
            duration != nil || containers != nil || videoCodecs != nil || audioCodecs != nil || maxWidth != nil
                || maxHeight != nil || maxPixels != nil || !require.isEmpty
        }
    }

    package static let name = "validate"
    package static let summary =
        "Checks extension, content, size, duration, container, codecs, dimensions and required streams, and that an MP4/QuickTime file is not cut short."

    let options: Options

    package init(options: Options) throws {
        self.options = options
    }

    /// Records one broken rule: its name, the message, what was expected and what the file has.
    private typealias Fail = (_ rule: RuleName, _ message: String, _ expected: String?, _ actual: String?) -> Void

    package func run(_ item: Item, context: StageContext) throws -> StageOutcome {
        var failures: [RuleFailure] = []
        func fail(_ rule: RuleName, _ message: String, expected: String? = nil, actual: String? = nil) {
            failures.append(
                RuleFailure(stage: Self.name, rule: rule, message: message, expected: expected, actual: actual))
        }

        let ext = item.fileExtension
        checkExtension(ext, fail: fail)
        let size = fileSize(item.artifact) ?? item.size
        checkSize(size, fail: fail)

        var contentMatches = true
        var isoMedia = false
        if options.sniff, size > 0 {
            let content = try Sniffer.sniff(path: item.artifact, stage: Self.name)
            isoMedia = [.quicktime, .mp4, .m4a].contains(content)
            contentMatches = checkContent(content, ext: ext, fail: fail)
        }

        // Rules that need the container are checked only when the file is what it claims to be: probing a
        // playlist renamed .mov is exactly what must not happen. An MP4/QuickTime file is always opened: a copy
        // cut short opens without complaint (its index is at the front), and only its index and boxes tell.
        if options.needsProbe || isoMedia, contentMatches, size > 0 {
            do {
                let probe = try context.probe(item, stage: Self.name)
                checkProbe(probe, fail: fail)
                if let cut = probe.truncation {
                    fail(.truncated, cut.message, expected: "\(cut.neededBytes) bytes", actual: "\(cut.size) bytes")
                }
            } catch let failed as ItemFailed {
                failures.append(contentsOf: failed.failures)
            }
        }

        if !failures.isEmpty { throw ItemFailed(failures) }
        return .proceed
    }

    private func checkExtension(_ ext: String, fail: Fail) {
        guard let allowed = options.extensions else { return }
        let normalized = allowed.map { $0.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: ".")) }
        if !normalized.contains(ext) {
            fail(
                .extensions, "extension \(ext.isEmpty ? "(none)" : "." + ext) is not allowed",
                normalized.map { "." + $0 }.joined(separator: ", "), ext.isEmpty ? "(none)" : "." + ext)
        }
    }

    private func checkSize(_ size: Int64, fail: Fail) {
        if size == 0 {
            fail(.minBytes, "file is empty", "more than 0 bytes", "0 bytes")
        } else if let minBytes = options.minBytes, size < minBytes.bytes {
            fail(.minBytes, "file is smaller than \(minBytes)", "≥ \(minBytes.bytes) bytes", "\(size) bytes")
        }
        if let maxBytes = options.maxBytes, size > maxBytes.bytes {
            fail(
                .maxBytes, "file is larger than \(maxBytes)", "≤ \(maxBytes.bytes) bytes",
                "\(size) bytes (\(ByteSize.format(size)))")
        }
    }

    /// False when the bytes are not what the extension says, or a list that may reference other files.
    private func checkContent(_ content: ContentKind, ext: String, fail: Fail) -> Bool {
        if let accepted = ContentKind.accepted(forExtension: ext), !accepted.contains(content) {
            fail(
                .content, "content is \(content.displayName), extension says .\(ext)",
                accepted.map(\.displayName).sorted().joined(separator: " or "), content.displayName)
            return false
        } else if content == .hlsPlaylist || content == .concatList {
            fail(
                .content, "content is \(content.displayName), which may reference other files", nil,
                content.displayName)
            return false
        }
        return true
    }

    private func checkProbe(_ probe: ProbeResult, fail: Fail) {
        checkDuration(probe, fail: fail)
        if let containers = options.containers?.map({ $0.lowercased() }) {
            let names = Set(probe.formatName.split(separator: ",").map(String.init) + [probe.content.rawValue])
            if names.isDisjoint(with: containers) {
                fail(
                    .containers, "container \(probe.formatName) is not allowed", containers.joined(separator: ", "),
                    probe.formatName)
            }
        }
        for (rule, kind, allowedList) in [
            (RuleName.videoCodecs, "video", options.videoCodecs), (RuleName.audioCodecs, "audio", options.audioCodecs),
        ] {
            guard let allowed = allowedList?.map({ $0.lowercased() }) else { continue }
            for stream in probe.streams where stream.codecType == kind {
                let codec = stream.codecName ?? "unknown"
                if !allowed.contains(codec.lowercased()) {
                    fail(
                        rule, "\(kind) stream #\(stream.index) is \(codec), which is not allowed",
                        allowed.joined(separator: ", "), codec)
                }
            }
        }
        checkDimensions(probe, fail: fail)
        checkRequirements(probe, fail: fail)
    }

    private func checkDuration(_ probe: ProbeResult, fail: Fail) {
        guard let limits = options.duration else { return }
        guard let duration = probe.duration else {
            fail(.duration, "the file has no duration", "a duration", "none")
            return
        }
        let shown = DurationValue(seconds: duration).description
        if let min = limits.min, duration < min.seconds {
            fail(.durationMin, "duration \(shown) is shorter than \(min)", "≥ \(min)", shown)
        }
        if let max = limits.max, duration > max.seconds {
            fail(.durationMax, "duration \(shown) is longer than \(max)", "≤ \(max)", shown)
        }
    }

    private func checkDimensions(_ probe: ProbeResult, fail: Fail) {
        if let (width, height) = displayedDimensions(probe) {
            let shown = "\(width)×\(height)"
            if let maxWidth = options.maxWidth, width > maxWidth {
                fail(.maxWidth, "width \(width) is over \(maxWidth)", "≤ \(maxWidth)", shown)
            }
            if let maxHeight = options.maxHeight, height > maxHeight {
                fail(.maxHeight, "height \(height) is over \(maxHeight)", "≤ \(maxHeight)", shown)
            }
            if let maxPixels = options.maxPixels, width * height > maxPixels {
                fail(
                    .maxPixels, "\(width * height) pixels is over \(maxPixels)", "≤ \(maxPixels)",
                    "\(width * height) (\(shown))")
            }
        } else if options.maxWidth != nil || options.maxHeight != nil || options.maxPixels != nil {
            if !probe.content.isImage && probe.videoStreams.isEmpty {
                // An audio file has no dimensions: the limits do not apply to it.
            } else {
                fail(.dimensions, "the dimensions could not be read", "width and height", "none")
            }
        }
    }

    private func checkRequirements(_ probe: ProbeResult, fail: Fail) {
        for requirement in options.require {
            switch requirement {
            case .audio where probe.audioStreams.isEmpty:
                fail(.require, "the file has no audio stream", "audio", "streams: \(streamSummary(probe))")
            case .video where probe.videoStreams.isEmpty && probe.image == nil:
                fail(.require, "the file has no video stream", "video", "streams: \(streamSummary(probe))")
            case .location where probe.location == nil:
                fail(.require, "the file has no location metadata", "location", "none")
            default: break
            }
        }
    }

    private func streamSummary(_ probe: ProbeResult) -> String {
        probe.streams.isEmpty
            ? "none" : probe.streams.map { "\($0.codecType) (\($0.codecName ?? "?"))" }.joined(separator: ", ")
    }

    /// Width and height as a viewer shows them: swapped for a ±90° display matrix or EXIF orientation 5–8.
    private func displayedDimensions(_ probe: ProbeResult) -> (Int, Int)? {
        guard let (width, height) = probe.dimensions else { return nil }
        if let image = probe.image { return image.orientation >= 5 ? (height, width) : (width, height) }
        if let rotation = probe.videoStreams.first?.rotation,
            abs(abs(rotation).truncatingRemainder(dividingBy: 180) - 90) < 1
        {
            return (height, width)
        }
        return (width, height)
    }

    private func fileSize(_ path: String) -> Int64? {
        try? FileStatus(path: path, followLinks: true).size
    }
}

extension Sniffer {
    /// `sniff(path:)` with a read failure turned into this stage's rule failure.
    static func sniff(path: String, stage: String) throws -> ContentKind {
        do {
            return try sniff(path: path)
        } catch let error as ProbeError {
            throw ItemFailed(stage: stage, rule: error.rule, message: error.message)
        }
    }
}
