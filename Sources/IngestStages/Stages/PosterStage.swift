import Foundation
import IngestCore
import IngestMedia
import IngestTemplates

/// `poster`: a still of the video as a named output beside the file (the file stays what later stages send): the
/// frame at `at`, or else the first frame that is neither black nor blurred, upright, as a JPEG at the `jpeg`
/// stage's quality scale. Shares one decode pass with the `thumbnails` and `video … output:` stages next to it.
package struct PosterStage: FramePassStage {
    package struct Options: StageOptions, Sendable {
        package var output = "poster"
        package var at: DurationValue?
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
                OptionField(
                    "quality", \.quality, doc: "JPEG quality, 0.01…1 or 1…100 (as the jpeg stage).", default: "80"),
                OptionField(
                    "max_side", \.maxSide, range: 16...16_384, doc: "Longest side in pixels (aspect ratio kept).",
                    default: "the video's size"),
            ]
        }

        package func validate(at node: ConfigNode) throws { try OutputName.check(output, at: node) }
    }

    package static let name = "poster"
    package static let summary =
        "Adds a poster frame (JPEG) of the video as a named output: at a time, or the first frame neither black nor blurred."
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
        let picker = try PosterPicker(
            PosterPicker.Settings(
                at: options.at?.seconds, quality: options.quality.libjpeg, maxSide: options.maxSide ?? Int.max,
                rotation: video.rotation ?? 0))
        let path = ItemOutputs.workPath(for: item, stage: stage, fileExtension: "jpg", context: context)
        return FramePart(stage: stage, tap: picker, proxy: nil) { counts in
            guard let poster = try picker.poster() else {
                throw ItemFailed(
                    stage: stage, rule: .corrupt, message: "no video frame could be decoded for the poster")
            }
            try FramePass.write(poster.jpeg, to: path, stage: stage)
            let details: JSONObject = [
                "width": .int(Int64(poster.width)), "height": .int(Int64(poster.height)),
                "time": .double((poster.time * 1000).rounded() / 1000),
            ]
            ItemOutputs.record(
                item, name: options.output, workPath: path, format: "jpeg", details: details, stage: stage)
            var fact = details
            fact["output"] = .string(options.output)
            fact["chosen"] = .string(
                options.at != nil ? "at" : poster.clean ? "first clear frame" : "best frame (none clear)")
            fact["pass"] = FramePass.describe(counts)
            item.facts[context.resultName ?? stage] = .object(fact)
        }
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
