import Foundation
import Testing

@testable import IngestCore
@testable import IngestMedia
@testable import IngestStages
@testable import IngestStagesTestSupport

/// `poster: { format: webp }` and `thumbnails: { format: webp }`: the still is a lossy WebP made by libavcodec's
/// libwebp encoder, at the size asked and the `jpeg` stage's quality scale; ffprobe is the oracle.
@Suite struct StillFormatTests {
    let outputs = OutputStagesTests()

    func poster(_ folder: MediaFolder, _ input: String, configure: (inout PosterStage.Options) -> Void) throws -> (
        description: JSONObject, bytes: [UInt8]
    ) {
        var options = PosterStage.Options()
        configure(&options)
        let item = folder.item(input)
        _ = try PosterStage(options: options).run(item, context: outputs.context(folder))
        let description = try #require(ItemOutputs.description(of: options.output, in: item))
        let path = try #require(description["work_path"]?.stringValue)
        return (description, [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
    }

    /// `RIFF`, the chunk's size (the file's less 8 bytes), `WEBP`: the container libwebp writes.
    func isWebP(_ bytes: [UInt8]) -> Bool {
        guard bytes.count > 12 else { return false }
        let size = bytes[4..<8].reversed().reduce(0) { $0 << 8 | Int($1) }
        return bytes[0..<4] == Array("RIFF".utf8)[...] && bytes[8..<12] == Array("WEBP".utf8)[...]
            && size == bytes.count - 8
    }

    @Test func aWebPPosterIsAValidWebPAtTheAskedSize() throws {
        let folder = try MediaFolder("poster-webp")
        let input = try outputs.blackBlurredSharp(folder)
        let (description, bytes) = try poster(folder, input) {
            $0.format = .webp
            $0.maxSide = 160
        }
        #expect(isWebP(bytes), "\(bytes.prefix(16))")
        #expect(description["format"]?.stringValue == "webp")
        #expect(description["path"]?.stringValue == "clip.poster.webp")
        #expect(description["size"]?.intValue == Int64(bytes.count))
        #expect(description["width"]?.intValue == 160)
        let path = try #require(description["work_path"]?.stringValue)
        #expect(path.hasSuffix(".webp"))
        let stream = try #require(try folder.stream(path, "video"))
        #expect(stream["codec_name"] as? String == "webp")
        #expect(stream["width"] as? Int == 160)
        #expect(stream["height"] as? Int == 120)
        // The report's card decodes it as it does a JPEG poster: the sharp frame, not black.
        #expect(try StillThumbnailer.webp(path: path).lumaMean > 24)
    }

    /// `quality` reads as the `jpeg` stage's (0.01…1 or 1…100) and reaches libwebp: lower is smaller.
    @Test func aWebPPostersQualityIsTheJpegStagesScale() throws {
        let folder = try MediaFolder("poster-webp-quality")
        let input = try outputs.blackBlurredSharp(folder)
        let low = try poster(folder, input) {
            $0.format = .webp
            $0.quality = JpegStage.Quality(libjpeg: 10)
            $0.output = "low"
        }
        let high = try poster(folder, input) {
            $0.format = .webp
            $0.quality = JpegStage.Quality(libjpeg: 95)
            $0.output = "high"
        }
        #expect(isWebP(low.bytes) && isWebP(high.bytes))
        #expect(low.bytes.count * 2 < high.bytes.count, "q10 \(low.bytes.count) bytes, q95 \(high.bytes.count)")
    }

    @Test func aWebPSheetIsAValidWebP() throws {
        let folder = try MediaFolder("sheet-webp")
        let input = try outputs.blackBlurredSharp(folder)
        var options = ThumbnailsStage.Options()
        options.count = 4
        options.format = .webp
        let item = folder.item(input)
        _ = try ThumbnailsStage(options: options).run(item, context: outputs.context(folder))
        let sheet = try #require(ItemOutputs.description(of: "sheet", in: item))
        let path = try #require(sheet["work_path"]?.stringValue)
        #expect(isWebP([UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))))
        #expect(sheet["path"]?.stringValue == "clip.sheet.webp")
        // 2 × 2 tiles of 320×240 with 4-pixel gaps.
        #expect(try folder.stream(path, "video")?["width"] as? Int == 2 * 320 + 3 * 4)
    }
}
