import Foundation
import Testing

@testable import Ingest

/// The `jpeg` stage against real tools: fixtures are made here with ffmpeg, exiftool and heif-enc; djpeg/cjpeg are
/// the reference encoder and the decoder of what we write; exiftool and ffprobe read the results back.
@Suite final class JpegStageTests {
    let directory: URL

    /// Each test gets its own folder (tests run in parallel), removed when the test ends.
    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("ingest-jpeg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    // MARK: - Helpers

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
    var workDirectory: String { path("work") }

    @discardableResult
    static func run(_ command: String, _ arguments: [String], input: Data? = nil) throws -> (
        status: Int32, stdout: Data, stderr: String
    ) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [command] + arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        // Read both pipes concurrently with the process so neither can fill up and block it.
        nonisolated(unsafe) var errorData = Data()
        let reader = Thread { errorData = errors.fileHandleForReading.readDataToEndOfFile() }
        reader.start()
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        while !reader.isFinished { usleep(1000) }
        return (process.terminationStatus, outputData, String(decoding: errorData, as: UTF8.self))
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
        let size = (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? NSNumber)?.int64Value ?? 0
        let item = Item(path: file, relativePath: (file as NSString).lastPathComponent, size: size)
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
            #expect(failure.rule == rule, "\(failure)")
            return failure
        }
        Issue.record("\(file) should fail rule \(rule)")
        return RuleFailure(stage: "", rule: "", message: "")
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
