import Foundation
import Testing

@testable import IngestConfig
@testable import IngestCore
@testable import IngestMedia
@testable import IngestNetwork
@testable import IngestStages

/// The `jpeg` stage on inputs other than a plain JPEG (HEIC, PNG with alpha), on files already small enough, and on
/// broken or hostile JPEGs (truncated, corrupt, pixel bombs, oversized), plus how options decode.
extension JpegStageTests {
    // MARK: - Other inputs

    @Test func heicBecomesAValidJPEG() throws {
        let source = path("source.png")
        try ffmpeg("-f lavfi -i testsrc2=size=640x480 -frames:v 1 \(source)")
        let input = path("photo.heic")
        try sh("heif-enc -q 90 -o \(input) \(source) >/dev/null")
        let (item, fact) = try runStage(input)
        let decoded = try Self.decode(item.artifact)
        #expect(decoded.width == 640 && decoded.height == 480)
        let probe = try Self.run(
            "ffprobe",
            ["-v", "error", "-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0", item.artifact])
        #expect(
            String(decoding: probe.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                == "mjpeg,640,480")
        #expect(fact?["source_format"] == "heif")
        #expect(item.artifact.hasSuffix("photo.heic.jpg"))
        // The picture survives: compare with the PNG the HEIC was made from.
        let reference = path("source.jpg")
        try ffmpeg("-i \(source) -q:v 1 \(reference)")
        #expect(try Self.psnr(decoded, Self.decode(reference)) >= 28)
    }

    @Test func pngWithAlphaBecomesAValidJPEGOverWhite() throws {
        let input = path("alpha.png")
        // Left half opaque red, right half fully transparent.
        try ffmpeg(
            "-f lavfi -i color=c=red@1.0:s=200x100,format=rgba -vf \"geq=r='255':g='0':b='0':a='if(lt(X,100),255,0)'\" "
                + "-frames:v 1 \(input)")
        let (item, _) = try runStage(input)
        let image = try Self.decode(item.artifact)
        #expect(image.width == 200 && image.height == 100)
        let left = image.pixel(20, 50)
        let right = image.pixel(180, 50)
        #expect(left[0] > 200 && left[1] < 60, "opaque red stays red: \(left)")
        #expect(right.allSatisfy { $0 > 235 }, "transparent becomes white: \(right)")
        let probe = try Self.run(
            "ffprobe",
            ["-v", "error", "-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0", item.artifact])
        #expect(
            String(decoding: probe.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                == "mjpeg,200,100")
    }

    // MARK: - min_savings

    @Test func minSavingsKeepsAnAlreadySmallOriginal() throws {
        let input = path("small.jpg")
        try sh(
            "ffmpeg -v error -y -f lavfi -i testsrc2=size=640x480 -frames:v 1 -f image2pipe -vcodec ppm - | cjpeg -quality 60 > \(input)"
        )
        let original = try Data(contentsOf: URL(fileURLWithPath: input))
        let (item, fact) = try runStage(input) {
            $0.minSavings = Percentage(fraction: 0.05)
            $0.metadata = .keep
        }
        #expect(fact?["kept_original"] == true)
        #expect(item.artifact == input)
        #expect(try Data(contentsOf: URL(fileURLWithPath: item.artifact)) == original)
        #expect(workFiles().isEmpty)
    }

    @Test func minSavingsWithStripStillRemovesGPSLosslessly() throws {
        let input = path("small-gps.jpg")
        try sh(
            "ffmpeg -v error -y -f lavfi -i testsrc2=size=640x480 -frames:v 1 -f image2pipe -vcodec ppm - | cjpeg -quality 60 > \(input)"
        )
        try sh("exiftool -q -overwrite_original -GPSLatitude=47.6 -GPSLatitudeRef=N \(input)")
        let pixelsBefore = try Self.decode(input)
        let (item, fact) = try runStage(input) { $0.minSavings = Percentage(fraction: 0.05) }
        #expect(fact?["kept_original"] == true)
        #expect(item.artifact != input)
        #expect(try Self.psnr(pixelsBefore, Self.decode(item.artifact)) == .infinity, "pixels must be untouched")
        #expect(!(try Self.exiftool(item.artifact)).keys.contains { $0.contains("GPS") })
    }

    // MARK: - Bad input

    @Test func truncatedJPEGFailsWithTurboJPEGsText() throws {
        let good = try photo("good.jpg", width: 640, height: 480)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: good))
        let input = path("truncated.jpg")
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: input))
        let failure = try expectFailure(input, rule: "corrupt")
        let djpeg = try Self.run("djpeg", [input])
        #expect(djpeg.stderr.contains("Premature end of JPEG file"))
        #expect(failure.message.contains("Premature end of JPEG file"), "\(failure.message)")
        #expect(workFiles().isEmpty)
    }

    @Test func corruptHuffmanDataFailsWithTurboJPEGsText() throws {
        let good = try photo("good.jpg", width: 640, height: 480)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: good)))
        let segments = try JPEGSegments.parse(bytes)
        // Overwrite entropy-coded data well after the headers with pseudo-random bytes (no 0xFF: no fake markers).
        let start = segments.bodyStart + 2000
        var state: UInt32 = 12345
        for index in start..<start + 600 {
            state = (state &* 1_103_515_245 &+ 12345) & 0x7FFF_FFFF
            let value = UInt8(truncatingIfNeeded: state >> 16)
            bytes[index] = value == 0xFF ? 0 : value
        }
        let input = path("huffman.jpg")
        try Data(bytes).write(to: URL(fileURLWithPath: input))
        let failure = try expectFailure(input, rule: "corrupt")
        let djpeg = try Self.run("djpeg", [input])
        let warnings = djpeg.stderr.split(separator: "\n").map(String.init)
        // djpeg (reading through stdio, so libjpeg's careful Huffman decoder runs) names the bad code; TurboJPEG on
        // a memory buffer takes the fast decoder and notices the damage at the next marker. Either way it is
        // libjpeg's "Corrupt JPEG data" text that must reach the report.
        #expect(warnings.contains { $0.contains("Corrupt JPEG data") }, "oracle: \(djpeg.stderr)")
        #expect(failure.message.contains("TurboJPEG could not decode: Corrupt JPEG data"), "\(failure.message)")
    }

    /// Rewrites the SOF0 size of a JPEG.
    func jpegWithFrameSize(_ name: String, width: Int, height: Int) throws -> String {
        let good = try photo("small-\(name).jpg", width: 64, height: 48)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: good)))
        var index = 2
        while index + 9 < bytes.count {
            if bytes[index] == 0xFF, bytes[index + 1] == 0xC0 {
                bytes[index + 5] = UInt8(height >> 8)
                bytes[index + 6] = UInt8(height & 0xFF)
                bytes[index + 7] = UInt8(width >> 8)
                bytes[index + 8] = UInt8(width & 0xFF)
                break
            }
            index += 1
        }
        let file = path(name)
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        return file
    }

    static func peakResidentKiB() -> Int {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return usage.ru_maxrss
    }

    @Test func zeroByZeroHeaderFails() throws {
        let input = try jpegWithFrameSize("zero.jpg", width: 0, height: 0)
        let failure = try expectFailure(input, rule: "dimensions")
        #expect(failure.actual == "0×0")
    }

    @Test func pixelBombsFailBeforeAllocation() throws {
        let peakBefore = Self.peakResidentKiB()
        // JPEG: 65000×65000 (4.2 gigapixels, 12 GiB as RGB) in a file of a few KiB.
        let jpeg = try jpegWithFrameSize("bomb.jpg", width: 65000, height: 65000)
        let jpegFailure = try expectFailure(jpeg, rule: "max_pixels")
        #expect(jpegFailure.actual?.contains("65000×65000") == true)

        // PNG: 70000×70000 in IHDR (JPEG cannot even say that much).
        let small = path("small.png")
        try ffmpeg("-f lavfi -i color=c=white:s=16x16 -frames:v 1 \(small)")
        var png = [UInt8](try Data(contentsOf: URL(fileURLWithPath: small)))
        for (offset, value) in [(16, 70000), (20, 70000)] {
            png.replaceSubrange(offset..<offset + 4, with: (0..<4).map { UInt8(value >> (24 - 8 * $0) & 0xFF) })
        }
        let bomb = path("bomb.png")
        try Data(png).write(to: URL(fileURLWithPath: bomb))
        let pngFailure = try expectFailure(bomb, rule: "max_pixels")
        #expect(pngFailure.actual?.contains("70000×70000") == true)

        // A lower limit is honoured too.
        let photo = try photo("ten-mp-limit.jpg", width: 640, height: 480)
        _ = try expectFailure(photo, rule: "max_pixels") { $0.maxPixels = 100_000 }

        // Nothing close to the size of those images was allocated (a decode would need gigabytes).
        #expect(Self.peakResidentKiB() - peakBefore < 512 * 1024)
        #expect(workFiles().isEmpty)
    }

    @Test func unsupportedInputNamesItsType() throws {
        let input = path("anim.gif")
        try ffmpeg("-f lavfi -i color=c=red:s=32x32 -frames:v 1 \(input)")
        let failure = try expectFailure(input, rule: "unsupported")
        #expect(failure.message.contains("GIF"))
        let text = path("notes.jpg")
        try "not a picture".write(toFile: text, atomically: true, encoding: .utf8)
        _ = try expectFailure(text, rule: "unsupported")
    }

    @Test func oversizedInputIsRefusedBeforeReading() throws {
        let input = try photo("big.jpg", width: 640, height: 480)
        let failure = try expectFailure(input, rule: "max_bytes") { $0.maxBytes = ByteSize(bytes: 1000) }
        #expect(failure.expected == "≤ 1000 bytes")
    }

    @Test func outputIsWrittenAtomicallyAndTheOriginalIsUntouched() throws {
        let input = try photo("keepme.jpg", width: 320, height: 240)
        let original = try Data(contentsOf: URL(fileURLWithPath: input))
        let (item, _) = try runStage(input)
        #expect(try Data(contentsOf: URL(fileURLWithPath: input)) == original)
        #expect(item.artifact == workDirectory + "/jpeg/0/keepme.jpg.jpg")
        #expect(workFiles() == ["jpeg/0/keepme.jpg.jpg"])
        // An unwritable work directory fails the item with the rule and leaves nothing behind.
        let blocked = path("blocked")
        try "file, not a folder".write(toFile: blocked, atomically: true, encoding: .utf8)
        var options = JpegStage.Options()
        options.quality = JpegStage.Quality(libjpeg: 80)
        let stage = try JpegStage(options: options)
        let context = StageContext(settings: RunSettings(workDirectory: blocked, environment: [:]))
        let other = Item(path: input, relativePath: "keepme.jpg", size: Int64(original.count))
        #expect(throws: ItemFailed.self) { try stage.run(other, context: context) }
        #expect(other.artifact == input)
    }

    // MARK: - Options

    @Test func optionsDecodeBothQualityScalesAndSubsamplingNumbers() throws {
        func options(_ yaml: String) throws -> JpegStage.Options {
            let pipeline = "version: 1\nname: t\nstages:\n  - jpeg: \(yaml)\n"
            let loaded = try Pipeline.parse(yaml: pipeline, environment: [:])
            return try #require(loaded.stages.first?.stage as? JpegStage).options
        }
        #expect(try options("{ quality: 0.8 }").quality.libjpeg == 80)
        #expect(try options("{ quality: 80 }").quality.libjpeg == 80)
        #expect(try options("{ subsampling: 444 }").subsampling == .s444)
        #expect(try options("{ min_savings: 5% }").minSavings?.fraction == 0.05)
        #expect(try options("{ metadata: keep-except-gps }").metadata == .keepExceptGPS)
        #expect(throws: (any Error).self) { try options("{ quality: 150 }") }
        #expect(throws: (any Error).self) { try options("{ subsampling: 411 }") }
        #expect(throws: (any Error).self) { try options("{ metadata: drop }") }
    }
}
