import Foundation
import IngestCore
import IngestMedia
import IngestTemplates

/// `poster`: a still of the video as a named output beside the file (the file stays what later stages send): the
/// frame at `at`, or else the first frame that is neither black nor blurred, upright, as a JPEG (or a WebP) at the
/// `jpeg` stage's quality scale. Shares one decode pass with the `thumbnails` and `video … output:` stages next to it.
package struct PosterStage: FramePassStage {
    package struct Options: StageOptions, Sendable {
        package var output = "poster"
        package var at: DurationValue?
        package var format = StillFormat.jpeg
        package var quality = JpegStage.Quality(libjpeg: 80)
        package var maxSide: Int?
        package init() {}

        package static var fields: [OptionField<Options>] {
            [
                OptionField(
                    "output", \.output,
                    doc: "Name of the output (`{{outputs.poster.size}}`, `upload: { output: poster }`).",
                    default: "poster"),
                OptionField(
                    "at", \.at,
                    doc: "Time of the frame (`1s`, `1m30s`); past the end, the last frame.",
                    default: "the first frame neither black nor blurred"),
                StillFormat.field(\.format),
                StillFormat.qualityField(\.quality),
                OptionField(
                    "max_side", \.maxSide, range: 16...16_384, doc: "Longest side in pixels (aspect ratio kept).",
                    default: "the video's size"),
            ]
        }

        package func validate(at node: ConfigNode) throws { try OutputName.check(output, at: node) }
    }

    package static let name = "poster"
    package static let summary =
        "Adds a poster frame (JPEG or WebP) of the video as a named output: at a time, or the first frame neither black nor blurred."
    package static let writesWorkFiles = true

    let options: Options
    package init(options: Options) throws { self.options = options }

    package var joinsFramePass: Bool { true }

    package func run(_ item: Item, context: StageContext) throws -> StageOutcome {
        try runAlone(item, context: context)
    }

    package func framePart(_ item: Item, context: StageContext) throws -> FramePart? {
        let stage = Self.name
        if ItemOutputs.deliveredEarlier(item, name: options.output, context: context) { return nil }
        let (_, video) = try FramePass.videoStream(item, stage: stage, context: context)
        let still = StillSettings(
            StillEncoding(options.format, quality: options.quality.libjpeg), rotation: video.rotation ?? 0)
        let picker = try PosterPicker(
            PosterPicker.Settings(at: options.at?.seconds, maxSide: options.maxSide ?? Int.max, still: still))
        return FramePart.still(
            item, name: options.output, format: options.format, stage: stage, context: context, tap: picker
        ) {
            guard let poster = try picker.poster() else {
                throw ItemFailed(
                    stage: stage, rule: .corrupt, message: "no video frame could be decoded for the poster")
            }
            let details: JSONObject = [
                "width": .int(Int64(poster.width)), "height": .int(Int64(poster.height)),
                "time": .double((poster.time * 1000).rounded() / 1000),
            ]
            let chosen = options.at != nil ? "at" : poster.clean ? "first clear frame" : "best frame (none clear)"
            return (poster.bytes, details, ["chosen": .string(chosen)])
        }
    }
}

extension StillFormat: OptionEnum {
    /// The `format` option of a stage that writes a still.
    static func field<Options>(_ path: WritableKeyPath<Options, StillFormat>) -> OptionField<Options> {
        OptionField(
            "format", path, doc: "`jpeg`, or `webp` (lossy WebP through libwebp, smaller at the same look).",
            default: "jpeg")
    }

    /// The `quality` option of a stage that writes a still: the `jpeg` stage's scale, which WebP's shares.
    static func qualityField<Options>(_ path: WritableKeyPath<Options, JpegStage.Quality>) -> OptionField<Options> {
        OptionField(
            "quality", path, doc: "Quality, 0.01…1 or 1…100 (as the jpeg stage; WebP's on the same scale).",
            default: "80")
    }
}

/// The name an output goes by: letters, digits and `_`, starting with a letter, as a template path segment needs.
enum OutputName {
    static func check(_ name: String, at node: ConfigNode) throws {
        let valid =
            !name.isEmpty && name.count <= 64 && name.first!.isLetter
            && name.allSatisfy { ($0.isLetter || $0.isNumber || $0 == "_") && $0.isASCII }
        guard valid else {
            throw node.error(
                "output must be a name of letters, digits and _ starting with a letter (poster, proxy_720), found \(ConfigNode.echo(name))"
            )
        }
    }
}
