import Foundation
import Testing

@testable import IngestCore
@testable import IngestCoreTestSupport
@testable import IngestNetwork
@testable import IngestStages
@testable import IngestTestSupport

/// The `jpeg` stage against real tools: fixtures are made here with ffmpeg, exiftool and heif-enc; djpeg/cjpeg are
/// the reference encoder and the decoder of what we write; exiftool and ffprobe read the results back.
@Suite final class JpegStageTests {
    let folder: TemporaryFolder
    var directory: URL { folder.url }

    /// Each test gets its own folder (tests run in parallel), removed when the test ends.
    init() throws { folder = try TemporaryFolder("jpeg") }

    deinit { folder.remove() }

    // MARK: - Helpers

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
    var workDirectory: String { path("work") }

    @discardableResult
    static func run(_ command: String, _ arguments: [String]) throws -> (status: Int32, stdout: Data, stderr: String) {
        try runCommandForData("/usr/bin/env", [command] + arguments)
    }

    /// Runs a shell pipeline and requires it to succeed.
    func sh(_ script: String) throws {
        let result = try Self.run("sh", ["-c", script])
        try #require(result.status == 0, "\(script): \(result.stderr)")
    }

    func ffmpeg(_ arguments: String) throws { try sh("ffmpeg -v error -y \(arguments)") }

    func runStage(
        _ file: String, configure: (inout JpegStage.Options) -> Void = { _ in }
    ) throws -> (item: Item, fact: JSONValue?) {
        var options = JpegStage.Options()
        configure(&options)
        let stage = try JpegStage(options: options)
        let item = Item.onDisk(file)
        let context = StageContext(settings: RunSettings(workDirectory: workDirectory, environment: [:]))
        _ = try stage.run(item, context: context)
        return (item, item.facts["jpeg"])
    }

    func expectFailure(
        _ file: String, rule: String, configure: (inout JpegStage.Options) -> Void = { _ in }
    ) throws -> RuleFailure {
        do {
            _ = try runStage(file, configure: configure)
        } catch let failed as ItemFailed {
            let failure = try #require(failed.failures.first)
            #expect(failure.stage == "jpeg")
            #expect(failure.rule.rawValue == rule, "\(failure)")
            return failure
        }
        Issue.record("\(file) should fail rule \(rule)")
        return RuleFailure(stage: "", rule: RuleName(rawValue: ""), message: "")
    }

    /// A decoded image from `djpeg -pnm` (an independent decoder).
    struct PPM {
        var width: Int
        var height: Int
        var channels: Int
        var pixels: [UInt8]
        func pixel(_ x: Int, _ y: Int) -> [Int] {
            let start = (y * width + x) * channels
            return pixels[start..<start + channels].map(Int.init)
        }
    }

    static func decode(_ file: String) throws -> PPM {
        let result = try run("djpeg", ["-pnm", file])
        try #require(result.status == 0, "djpeg \(file): \(result.stderr)")
        let bytes = [UInt8](result.stdout)
        var fields: [String] = []
        var index = 0
        while fields.count < 4, index < bytes.count {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A { index += 1 }
            var field = ""
            while index < bytes.count, bytes[index] != 0x20, bytes[index] != 0x0A {
                field.append(Character(UnicodeScalar(bytes[index])))
                index += 1
            }
            fields.append(field)
        }
        index += 1
        let channels = fields[0] == "P6" ? 3 : 1
        let width = try #require(Int(fields[1]))
        let height = try #require(Int(fields[2]))
        return PPM(width: width, height: height, channels: channels, pixels: Array(bytes[index...]))
    }

    static func psnr(_ a: PPM, _ b: PPM) throws -> Double {
        try #require(a.width == b.width && a.height == b.height && a.channels == b.channels)
        var sum = 0.0
        for (x, y) in zip(a.pixels, b.pixels) {
            let difference = Double(Int(x) - Int(y))
            sum += difference * difference
        }
        let mse = sum / Double(a.pixels.count)
        return mse == 0 ? .infinity : 10 * log10(255 * 255 / mse)
    }

    static func exiftool(_ file: String, _ extra: [String] = []) throws -> [String: Any] {
        let result = try run("exiftool", ["-j", "-a", "-G1"] + extra + [file])
        let array = try JSONSerialization.jsonObject(with: result.stdout) as? [[String: Any]]
        return try #require(array?.first)
    }

    static func fileSize(_ file: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: file)[.size] as? NSNumber)?.intValue) ?? -1
    }

    /// Files left in the work directory (a failure must leave none, not even a temp file).
    func workFiles() -> [String] {
        (FileManager.default.enumerator(atPath: workDirectory)?.allObjects as? [String] ?? []).filter {
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: workDirectory + "/" + $0, isDirectory: &isDirectory)
            return !isDirectory.boolValue
        }
    }

    /// A photo-like test picture (gradients, text, colour bars) at high quality.
    func photo(_ name: String, width: Int = 1280, height: Int = 960) throws -> String {
        let file = path(name)
        try ffmpeg("-f lavfi -i testsrc2=size=\(width)x\(height) -frames:v 1 -q:v 2 \(file)")
        return file
    }

    /// Blue with a red block in the stored top-left corner: where the red ends up tells the orientation.
    func markedPhoto(_ name: String, orientation: Int) throws -> String {
        let file = path(name)
        try ffmpeg(
            "-f lavfi -i color=c=blue:s=320x240 -vf drawbox=x=0:y=0:w=80:h=60:c=red:t=fill -frames:v 1 -q:v 2 \(file)")
        try sh(
            "exiftool -q -overwrite_original -n -Orientation=\(orientation) -XMP-tiff:Orientation=\(orientation) "
                + "-DateTimeOriginal='2024:05:01 12:34:56' "
                + "-GPSLatitude=47.6 -GPSLatitudeRef=N -GPSLongitude=122.3 -GPSLongitudeRef=W \(file)")
        return file
    }

    // MARK: - Output quality against the reference encoder

    /// A camera-like photo: detailed, noisy luma and smooth chroma (demosaicing and noise reduction leave camera
    /// chroma soft), stored 4:2:0 at high quality. `pixelFormat` picks the stored subsampling.
    func cameraLikePhoto(_ name: String, pixelFormat: String = "yuvj420p", width: Int = 1280, height: Int = 960)
        throws -> String
    {
        // Moderate saturation and contrast: camera pixels seldom clip, and clipped noise is lost in the reference's
        // RGB round trip (not in our planar path), which would make the two files differ for reasons of the test
        // picture, not of the encoder.
        let file = path(name)
        try ffmpeg(
            "-f lavfi -i testsrc2=size=\(width)x\(height),eq=saturation=0.5:contrast=0.8,format=yuv444p,"
                + "noise=c0s=6:allf=t,gblur=sigma=2:planes=6 "
                + "-frames:v 1 -pix_fmt \(pixelFormat) -q:v 2 \(file)")
        return file
    }

    /// Our output against `djpeg | cjpeg -quality 80 -sample 2x2`, both decoded by djpeg.
    func compareWithReference(_ input: String) throws -> (psnr: Double, sizeRatio: Double, item: Item, fact: JSONValue?)
    {
        let reference = path("reference.jpg")
        try sh("djpeg \(input) | cjpeg -quality 80 -sample 2x2 > \(reference)")
        let (item, fact) = try runStage(input)
        #expect(item.artifact != input)
        let psnr = try Self.psnr(Self.decode(item.artifact), Self.decode(reference))
        let ratio = Double(Self.fileSize(item.artifact)) / Double(Self.fileSize(reference))
        return (psnr, ratio, item, fact)
    }

    /// 4:2:0 in, 4:2:0 out: the planar fast path (no RGB round trip).
    @Test func fastPathMatchesDjpegCjpegQuality80() throws {
        let input = try cameraLikePhoto("photo.jpg")
        let result = try compareWithReference(input)
        #expect(result.psnr >= 40, "PSNR vs djpeg|cjpeg -quality 80: \(result.psnr) dB")
        #expect(abs(result.sizeRatio - 1) <= 0.05, "size ratio vs reference: \(result.sizeRatio)")
        let fact = result.fact
        #expect(fact?["kept_original"] == false)
        #expect(fact?["after_bytes"] == .int(Int64(Self.fileSize(result.item.artifact))))
        #expect(fact?["before_bytes"] == .int(Int64(Self.fileSize(input))))
        #expect(fact?["width"] == 1280 && fact?["height"] == 960)
        #expect(fact?["subsampling"] == "4:2:0")
        let probe = try Self.exiftool(result.item.artifact)
        #expect(probe["File:YCbCrSubSampling"] as? String == "YCbCr4:2:0 (2 2)")
        #expect(probe["File:EncodingProcess"] as? String == "Baseline DCT, Huffman coding")
    }

    /// 4:4:4 in, 4:2:0 out: chroma is resampled by libjpeg as cjpeg does it.
    @Test func subsamplingChangeMatchesDjpegCjpegQuality80() throws {
        let input = try cameraLikePhoto("photo444.jpg", pixelFormat: "yuvj444p")
        let result = try compareWithReference(input)
        #expect(result.psnr >= 40, "PSNR vs djpeg|cjpeg -quality 80: \(result.psnr) dB")
        #expect(abs(result.sizeRatio - 1) <= 0.05, "size ratio vs reference: \(result.sizeRatio)")
    }

    /// On synthetic sharp-edged chroma the reference loses detail (djpeg's upsampling then cjpeg's downsampling
    /// blur chroma on every generation) and our planar path does not: ours must be at least as close to the source.
    @Test func fastPathIsAtLeastAsFaithfulAsTheReference() throws {
        let input = try photo("bars.jpg")
        let reference = path("reference.jpg")
        try sh("djpeg \(input) | cjpeg -quality 80 -sample 2x2 > \(reference)")
        let (item, _) = try runStage(input)
        let source = try Self.decode(input)
        let ours = try Self.psnr(Self.decode(item.artifact), source)
        let theirs = try Self.psnr(Self.decode(reference), source)
        #expect(ours >= theirs, "ours \(ours) dB vs reference \(theirs) dB from the source")
    }

    @Test func progressiveAnd444AreHonoured() throws {
        let input = try cameraLikePhoto("photo.jpg", width: 320, height: 240)
        let (item, fact) = try runStage(input) {
            $0.progressive = true
            $0.subsampling = .s444
            $0.quality = JpegStage.Quality(libjpeg: 90)
        }
        let probe = try Self.exiftool(item.artifact)
        #expect((probe["File:EncodingProcess"] as? String)?.contains("Progressive") == true, "\(probe)")
        #expect(probe["File:YCbCrSubSampling"] as? String == "YCbCr4:4:4 (1 1)")
        #expect(fact?["quality"] == 90)
    }

    // MARK: - Orientation and size

    @Test func orientation6ComesOutUprightWithSwappedDimensions() throws {
        let input = try markedPhoto("rotated.jpg", orientation: 6)
        let (item, fact) = try runStage(input) { $0.metadata = .keep }
        let image = try Self.decode(item.artifact)
        #expect(image.width == 240 && image.height == 320)
        // Orientation 6 means "turn 90° clockwise to view": the stored top-left corner is the viewed top-right.
        let topRight = image.pixel(image.width - 10, 10)
        let topLeft = image.pixel(10, 10)
        let bottomLeft = image.pixel(10, image.height - 10)
        #expect(topRight[0] > 200 && topRight[2] < 60, "top-right should be red: \(topRight)")
        #expect(topLeft[2] > 200 && topLeft[0] < 60, "top-left should be blue: \(topLeft)")
        #expect(bottomLeft[2] > 200 && bottomLeft[0] < 60, "bottom-left should be blue: \(bottomLeft)")
        let tags = try Self.exiftool(item.artifact, ["-n"])
        #expect(tags["IFD0:Orientation"] as? Int == 1, "\(tags)")
        #expect(tags["XMP-tiff:Orientation"] as? Int == 1, "XMP must not turn the upright pixels again: \(tags)")
        #expect(fact?["orientation_applied"] == 6)
        #expect(fact?["width"] == 240 && fact?["height"] == 320)
    }

    @Test(arguments: [2, 3, 4, 5, 7, 8])
    func everyOrientationPutsTheMarkedCornerWhereViewersShowIt(orientation: Int) throws {
        let input = try markedPhoto("o\(orientation).jpg", orientation: orientation)
        let (item, _) = try runStage(input)
        let image = try Self.decode(item.artifact)
        let swapped = orientation >= 5
        #expect(image.width == (swapped ? 240 : 320) && image.height == (swapped ? 320 : 240))
        // Where the stored top-left corner is viewed, per the EXIF definition of each orientation.
        let right: Bool = [2, 3, 6, 7].contains(orientation)
        let bottom: Bool = [3, 4, 7, 8].contains(orientation)
        let x = right ? image.width - 10 : 10
        let y = bottom ? image.height - 10 : 10
        let corner = image.pixel(x, y)
        #expect(corner[0] > 200 && corner[2] < 60, "orientation \(orientation): corner (\(x),\(y)) is \(corner)")
        let opposite = image.pixel(image.width - 1 - x, image.height - 1 - y)
        #expect(opposite[2] > 200, "orientation \(orientation): opposite corner is \(opposite)")
    }

    /// 4:2:2 turned 90° is 4:4:0: the planes are converted first so the output is the 4:2:0 asked for.
    @Test func rotating422SourceGives420Output() throws {
        let file = path("422.jpg")
        try ffmpeg(
            "-f lavfi -i color=c=blue:s=320x240 -vf drawbox=x=0:y=0:w=80:h=60:c=red:t=fill -frames:v 1 "
                + "-pix_fmt yuvj422p -q:v 2 \(file)")
        try sh("exiftool -q -overwrite_original -n -Orientation=8 \(file)")
        let (item, fact) = try runStage(file)
        let image = try Self.decode(item.artifact)
        #expect(image.width == 240 && image.height == 320)
        // Orientation 8 (turn 90° counter-clockwise): the stored top-left is viewed bottom-left.
        let corner = image.pixel(10, image.height - 10)
        #expect(corner[0] > 200 && corner[2] < 60, "bottom-left should be red: \(corner)")
        #expect(fact?["subsampling"] == "4:2:0")
        #expect(try Self.exiftool(item.artifact)["File:YCbCrSubSampling"] as? String == "YCbCr4:2:0 (2 2)")
    }

    @Test func grayscaleStaysGrayscale() throws {
        let file = path("gray.jpg")
        try sh(
            "ffmpeg -v error -f lavfi -i testsrc2=size=320x240 -frames:v 1 -f image2pipe -vcodec ppm - "
                + "| cjpeg -grayscale -quality 95 > \(file)")
        let (item, fact) = try runStage(file) { $0.maxDimension = 160 }
        #expect(fact?["subsampling"] == "grayscale")
        let image = try Self.decode(item.artifact)
        #expect(image.channels == 1 && image.width == 160 && image.height == 120)
    }

    @Test func maxDimensionScalesTheLongEdge() throws {
        let input = try photo("large.jpg", width: 2000, height: 1500)
        let (item, fact) = try runStage(input) { $0.maxDimension = 800 }
        let probe = try Self.run(
            "ffprobe", ["-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0", item.artifact])
        #expect(
            String(decoding: probe.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == "800,600")
        #expect(fact?["resized"] == true)
        // Downscaled output still looks like the source downscaled by an independent tool.
        let reference = path("reference-small.png")
        try ffmpeg("-i \(input) -vf scale=800:600:flags=lanczos -pix_fmt rgb24 \(reference)")
        let referenceJPEG = path("reference-small.jpg")
        try ffmpeg("-i \(reference) -q:v 1 \(referenceJPEG)")
        let psnr = try Self.psnr(Self.decode(item.artifact), Self.decode(referenceJPEG))
        #expect(psnr >= 28, "PSNR vs ffmpeg lanczos downscale: \(psnr) dB")
    }

    // MARK: - Metadata

    @Test func stripRemovesGPSAndEXIF() throws {
        let input = try markedPhoto("gps.jpg", orientation: 1)
        let before = try Self.exiftool(input)
        #expect(before.keys.contains { $0.hasPrefix("GPS:") }, "fixture should have GPS: \(before.keys)")
        let (item, _) = try runStage(input)
        let after = try Self.exiftool(item.artifact)
        #expect(!after.keys.contains { $0.contains("GPS") }, "\(after.keys.sorted())")
        #expect(after["ExifIFD:DateTimeOriginal"] == nil)
    }

    @Test func keepExceptGPSKeepsTheDateAndDropsTheLocation() throws {
        let input = try markedPhoto("gps6.jpg", orientation: 6)
        let (item, _) = try runStage(input) { $0.metadata = .keepExceptGPS }
        let after = try Self.exiftool(item.artifact, ["-n"])
        #expect(after["ExifIFD:DateTimeOriginal"] as? String == "2024:05:01 12:34:56", "\(after)")
        #expect(!after.keys.contains { $0.contains("GPS") }, "\(after.keys.sorted())")
        #expect(after["IFD0:Orientation"] as? Int == 1)
        #expect(after["ExifIFD:ExifImageWidth"] == nil || after["ExifIFD:ExifImageWidth"] as? Int == 240)
    }

    @Test func keepKeepsGPS() throws {
        let input = try markedPhoto("keep.jpg", orientation: 1)
        let (item, _) = try runStage(input) {
            $0.metadata = .keep
            $0.quality = JpegStage.Quality(libjpeg: 95)
        }
        let after = try Self.exiftool(item.artifact, ["-n"])
        #expect(after["ExifIFD:DateTimeOriginal"] as? String == "2024:05:01 12:34:56")
        #expect(after["Composite:GPSLatitude"] as? Double == 47.6, "\(after)")
    }

    /// A syntactically valid ICC header padded to `size` bytes: enough for exiftool to recognise and extract it.
    static func iccProfile(size: Int) -> [UInt8] {
        var profile = [UInt8](repeating: 0, count: size)
        profile[0] = UInt8(size >> 24 & 0xFF)
        profile[1] = UInt8(size >> 16 & 0xFF)
        profile[2] = UInt8(size >> 8 & 0xFF)
        profile[3] = UInt8(size & 0xFF)
        for (offset, text) in [(4, "lcms"), (12, "mntr"), (16, "RGB "), (20, "XYZ "), (36, "acsp")] {
            profile.replaceSubrange(offset..<offset + 4, with: Array(text.utf8))
        }
        profile[8] = 4
        profile[9] = 0x30
        for index in 132..<size { profile[index] = UInt8(truncatingIfNeeded: index * 7) }
        return profile
    }

    @Test(arguments: [3000, 150_000])
    func iccProfileIsKept(size: Int) throws {
        let input = try photo("icc.jpg", width: 320, height: 240)
        let profile = Self.iccProfile(size: size)
        let profilePath = path("profile.icc")
        try Data(profile).write(to: URL(fileURLWithPath: profilePath))
        try sh("exiftool -q -overwrite_original '-ICC_Profile<=\(profilePath)' \(input)")
        let (item, _) = try runStage(input)
        let extracted = try Self.run("exiftool", ["-b", "-ICC_Profile", item.artifact])
        #expect([UInt8](extracted.stdout) == profile, "ICC profile of \(size) bytes should survive strip")
    }
}
