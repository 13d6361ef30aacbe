import Foundation
import IngestCore
import IngestMedia
import IngestTemplates

/// `thumbnails`: a sheet of `count` frames spread over the video, in a grid of tiles the size of the HTML report's
/// cards, as a named JPEG (or WebP) output beside the file. Shares one decode pass with `poster` and `video … output:`.
package struct ThumbnailsStage: FramePassStage {
    package struct Options: StageOptions, Sendable {
        package var output = "sheet"
        package var count = 12
        package var columns: Int?
        package var format = StillFormat.jpeg
        package var quality = JpegStage.Quality(libjpeg: 80)
        package init() {}

        package static var fields: [OptionField<Options>] {
            [
                OptionField(
                    "output", \.output, doc: "Name of the output (`upload: { output: sheet }`).", default: "sheet"),
                OptionField("count", \.count, range: 1...100, doc: "Frames on the sheet, 1…100.", default: "12"),
                OptionField(
                    "columns", \.columns, range: 1...100, doc: "Tiles per row.",
                    default: "as square as the count allows"),
                StillFormat.field(\.format),
                StillFormat.qualityField(\.quality),
            ]
        }

        package func validate(at node: ConfigNode) throws {
            try OutputName.check(output, at: node)
            if !(1...100).contains(count) { throw node.error("count must be 1…100, found \(count)") }
        }
    }

    package static let name = "thumbnails"
    package static let summary =
        "Adds a thumbnail sheet (a JPEG or WebP grid of frames spread over the video) as a named output."
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
        let (probe, video) = try FramePass.videoStream(item, stage: stage, context: context)
        guard let duration = probe.duration ?? video.duration, duration > 0 else {
            throw ItemFailed(stage: stage, rule: .corrupt, message: "the video has no duration to spread frames over")
        }
        let still = StillSettings(
            StillEncoding(options.format, quality: options.quality.libjpeg), rotation: video.rotation ?? 0)
        let builder = SheetBuilder(
            SheetBuilder.Settings(count: options.count, columns: options.columns, still: still), duration: duration)
        return FramePart.still(
            item, name: options.output, format: options.format, stage: stage, context: context, tap: builder
        ) {
            guard let sheet = try builder.sheet() else {
                throw ItemFailed(stage: stage, rule: .corrupt, message: "no video frame could be decoded for the sheet")
            }
            let details: JSONObject = [
                "width": .int(Int64(sheet.width)), "height": .int(Int64(sheet.height)),
                "tiles": .int(Int64(sheet.tiles)), "columns": .int(Int64(sheet.columns)),
            ]
            return (sheet.bytes, details, [:])
        }
    }
}
