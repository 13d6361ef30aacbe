import Foundation
import IngestCore
import IngestMedia
import NativeExif
import NativeFFmpeg
import NativeHEIF
import NativeJPEG
import NativeSystem

/// What the `jpeg` stage produced for one file.
struct StillTranscodeResult {
    /// The file later stages send: the new JPEG, or the original when it was kept unchanged.
    var artifact: String
    var fact: JSONObject
}

/// The work of the `jpeg` stage for one file: read (bounded), check the header, decode (TurboJPEG planar, FFmpeg
/// PNG, libheif), scale (swscale), turn upright, encode (TurboJPEG planar) and write atomically. Every failure is an
/// `ItemFailed` that names the rule and keeps the C library's text.
struct StillTranscoder {
    let options: JpegStage.Options
    let stage: String

    /// A decoded input: pixels plus what is needed to write the metadata back.
    private struct Source {
        var format: ContentKind
        var image: PlanarImage
        /// Size before any TurboJPEG scaled decode: what the header says.
        var width: Int
        var height: Int
        /// EXIF orientation still to apply to the pixels (1 for HEIF: libheif applies its rotation boxes).
        var orientation: Int
        var exif: ExifData?
        /// The original APP1 payload, written back verbatim when nothing requires a rebuild.
        var exifPayload: [UInt8]?
        var segments: JPEGSegments?
        var iccProfile: [UInt8]?
        var originalBytes: [UInt8]?
    }

    /// The bytes written for one file and the file sent: the re-encode, or the original (rewritten or as it is).
    private struct Output {
        var chunks: [[UInt8]]
        var artifact: String
        var bytes: Int64
        var keptOriginal = false
    }

    func transcode(path: String, outputPath: String) throws -> StillTranscodeResult {
        let source = try load(path)
        let before = fileSize(path) ?? Int64(source.originalBytes?.count ?? 0)

        let (width, height) = targetSize(source.width, source.height)
        let resized = width != source.width || height != source.height
        let rotated = source.orientation != 1
        let swap = PlanarImage.swapsAxes(source.orientation)
        let (finalWidth, finalHeight) = swap ? (height, width) : (width, height)
        guard finalWidth <= 65500, finalHeight <= 65500 else {
            throw fail(
                .dimensions, "a JPEG holds at most 65500 pixels per side; set max_dimension",
                expected: "≤ 65500 per side", actual: "\(finalWidth)×\(finalHeight)")
        }

        let compressor = try TurboJPEGCompressor()
        let planes = try prepare(
            source.image, orientation: source.orientation, width: width, height: height, compressor: compressor)
        let encoded: [UInt8]
        do {
            encoded = try compressor.compress(
                planes, quality: options.quality.libjpeg, progressive: options.progressive)
        } catch let error as TurboJPEGError {
            throw fail(.encode, "TurboJPEG could not encode: \(error.description)")
        }
        let metadata = metadataSegments(source, rebuildEXIF: rotated || resized, width: finalWidth, height: finalHeight)
        let chunks = JPEGSegments.inserting(metadata, into: encoded)
        var output = Output(chunks: chunks, artifact: outputPath, bytes: Int64(chunks.reduce(0) { $0 + $1.count }))
        if !resized, !rotated { output = keepingOriginal(output, before: before, source: source, path: path) }

        if !output.chunks.isEmpty { try write(output.chunks, to: outputPath) }

        var fact = JSONObject()
        fact["path"] = .string(output.artifact)
        fact["before_bytes"] = .int(before)
        fact["after_bytes"] = .int(output.bytes)
        fact["width"] = .int(Int64(output.keptOriginal ? source.width : finalWidth))
        fact["height"] = .int(Int64(output.keptOriginal ? source.height : finalHeight))
        fact["source_format"] = .string(source.format.rawValue)
        fact["source_width"] = .int(Int64(source.width))
        fact["source_height"] = .int(Int64(source.height))
        fact["orientation_applied"] = .int(Int64(source.orientation))
        fact["resized"] = .bool(resized)
        fact["kept_original"] = .bool(output.keptOriginal)
        fact["quality"] = .int(Int64(options.quality.libjpeg))
        fact["subsampling"] = .string(planes.subsamplingName)
        fact["metadata"] = .string(options.metadata.rawValue)
        return StillTranscodeResult(artifact: output.artifact, fact: fact)
    }

    /// `min_savings`: when the re-encode saves too little, the original stands in for it — only a JPEG neither
    /// resized nor turned (same pixels, same format). Its metadata is rewritten as the options say; when that
    /// changes nothing, nothing is written and the input itself is sent.
    private func keepingOriginal(_ encoded: Output, before: Int64, source: Source, path: String) -> Output {
        guard let minSavings = options.minSavings, source.format == .jpeg, let original = source.originalBytes,
            let segments = source.segments, Double(encoded.bytes) > Double(before) * (1 - minSavings.fraction)
        else { return encoded }
        var output = Output(chunks: [], artifact: encoded.artifact, bytes: 0, keptOriginal: true)
        let rewritten = rewriteMetadata(original, segments: segments, source: source)
        if rewritten.reduce(0, { $0 + $1.count }) == original.count && rewritten.joined().elementsEqual(original) {
            output.artifact = path
        } else {
            output.chunks = rewritten
        }
        output.bytes = Int64(output.chunks.isEmpty ? original.count : output.chunks.reduce(0) { $0 + $1.count })
        return output
    }

    // MARK: - Decoding

    /// Reads and decodes the file by what its bytes are (not its extension): JPEG, PNG or HEIF.
    private func load(_ path: String) throws -> Source {
        let kind: ContentKind
        do {
            kind = try Sniffer.sniff(path: path)
        } catch let error as ProbeError {
            throw fail(.unreadable, error.message)
        }
        switch kind {
        case .jpeg: return try loadJPEG(path)
        case .png: return try loadPNG(path)
        case .heif: return try loadHEIF(path)
        default:
            throw fail(
                .unsupported, "content is \(kind.displayName); the jpeg stage takes JPEG, PNG and HEIC/HEIF",
                expected: "JPEG, PNG or HEIC/HEIF", actual: kind.displayName)
        }
    }

    private func loadJPEG(_ path: String) throws -> Source {
        let bytes = try readWhole(path)
        let segments = try parseSegments(bytes)
        // The SOF size first, from our own parse: the bomb check needs no library at all.
        if let width = segments.frameWidth, let height = segments.frameHeight { try checkPixels(width, height) }
        let decompressor = try TurboJPEGDecompressor()
        let header: JPEGHeader
        do {
            header = try decompressor.header(of: bytes)
        } catch let error as TurboJPEGError {
            throw fail(.corrupt, "TurboJPEG cannot read the header: \(error.message)")
        }
        try checkPixels(header.width, header.height)
        guard !header.isCMYK, let subsampling = header.subsampling else {
            throw fail(
                .unsupported, "CMYK/YCCK or unusual-subsampling JPEGs are not supported",
                expected: "YCbCr or grayscale JPEG", actual: header.isCMYK ? "CMYK" : "unknown subsampling")
        }
        let exif = segments.exif.flatMap { ExifData(blob: $0) }
        let orientation = exif?.orientation ?? 1

        let (width, height) = targetSize(header.width, header.height)
        let decodeSize = scaledDecodeSize(header, toFit: (width, height))
        // Same size but another subsampling: go through RGB as djpeg | cjpeg do (libjpeg's chroma filters on both
        // sides). Otherwise stay in YCbCr: the planes go to the encoder (or to swscale) with no colour conversion.
        let convertThroughRGB =
            width == header.width && height == header.height
            && subsampling != subsamplingBeforeTurn(gray: subsampling == .gray, orientation: orientation)
        let image: PlanarImage
        do {
            image =
                convertThroughRGB
                ? try decompressor.decodeToRGB(bytes, width: header.width, height: header.height)
                : try decompressor.decodeToPlanes(
                    bytes, subsampling: subsampling, width: decodeSize.0, height: decodeSize.1)
        } catch let error as TurboJPEGError {
            throw fail(.corrupt, "TurboJPEG could not decode: \(error.message)")
        }
        return Source(
            format: .jpeg, image: image, width: header.width, height: header.height, orientation: orientation,
            exif: exif, exifPayload: segments.exif, segments: segments, iccProfile: segments.iccProfile,
            originalBytes: bytes)
    }

    /// The JPEG's marker segments, a broken structure failed as `corrupt` with where it broke.
    private func parseSegments(_ bytes: [UInt8]) throws -> JPEGSegments {
        do {
            return try JPEGSegments.parse(bytes)
        } catch let error as JPEGSegments.ParseError {
            switch error {
            case .notJPEG: throw fail(.corrupt, "not a JPEG: no SOI marker")
            case .truncated(let offset):
                throw fail(.corrupt, "JPEG is truncated before its image data (at byte \(offset) of \(bytes.count))")
            case .badMarker(let offset): throw fail(.corrupt, "JPEG marker structure is broken at byte \(offset)")
            }
        }
    }

    /// The size to decode at: let the IDCT do the bulk of a large reduction (1/2, 1/4, 1/8) and swscale the rest,
    /// never below the target.
    private func scaledDecodeSize(_ header: JPEGHeader, toFit target: (Int, Int)) -> (Int, Int) {
        guard target.0 < header.width || target.1 < header.height else { return (header.width, header.height) }
        for denominator in [8, 4, 2] {
            let scaled = (
                (header.width + denominator - 1) / denominator, (header.height + denominator - 1) / denominator
            )
            if scaled.0 >= target.0, scaled.1 >= target.1 { return scaled }
        }
        return (header.width, header.height)
    }

    private func loadPNG(_ path: String) throws -> Source {
        let bytes = try readWhole(path)
        // IHDR is the first chunk: width and height as big-endian 32-bit numbers at bytes 16 and 20.
        guard bytes.count >= 33, bytes[12..<16].elementsEqual(Array("IHDR".utf8)) else {
            throw fail(.corrupt, "PNG has no IHDR header chunk")
        }
        let width = bytes[16..<20].reduce(0) { $0 << 8 | Int($1) }
        let height = bytes[20..<24].reduce(0) { $0 << 8 | Int($1) }
        try checkPixels(width, height)
        let decoded: DecodedStill
        do {
            decoded = try PNGDecoder.decode(bytes, maxPixels: options.maxPixels)
        } catch let error as FFmpegError {
            throw fail(.corrupt, "FFmpeg's PNG decoder failed: \(error.description)")
        }
        return Source(
            format: .png, image: decoded.image, width: decoded.image.width, height: decoded.image.height,
            orientation: 1, iccProfile: decoded.iccProfile)
    }

    private func loadHEIF(_ path: String) throws -> Source {
        let size = fileSize(path) ?? 0
        if size > options.maxBytes.bytes { throw tooLarge(Int(size)) }
        do {
            let heif = try HEIFImage(path: path)
            try checkPixels(heif.width, heif.height)
            let exif = try heif.exifItem().flatMap { ExifData(heifExifItem: $0) }
            let icc = try heif.iccProfile()
            let pixels = try heif.decodeInterleavedRGB()
            let image = PlanarImage(
                packedRGB: pixels.bytes, width: pixels.width, height: pixels.height, stride: pixels.stride)
            // libheif has applied the file's rotation and mirror boxes; any EXIF orientation is informational.
            return Source(
                format: .heif, image: image, width: pixels.width, height: pixels.height, orientation: 1, exif: exif,
                iccProfile: icc)
        } catch let error as HEIFError {
            throw fail(.corrupt, "libheif could not read the image: \(error.description)")
        }
    }

    // MARK: - Pixels

    /// Scales and converts to the output layout, then applies the orientation. For a 90° turn the image is first
    /// converted to the transposed subsampling (4:2:2 → 4:4:0) so the turned planes come out as asked.
    private func prepare(
        _ image: PlanarImage, orientation: Int, width: Int, height: Int, compressor: TurboJPEGCompressor
    ) throws -> PlanarImage {
        let beforeTurn = subsamplingBeforeTurn(gray: image.layout == .yuv(.gray), orientation: orientation)
        let sameSize = image.width == width && image.height == height
        var planes = image
        if sameSize, image.layout == .rgb24 {
            do {
                planes = try compressor.planes(from: image, subsampling: beforeTurn)
            } catch let error as TurboJPEGError {
                throw fail(.encode, "TurboJPEG could not convert to YCbCr: \(error.description)")
            }
        } else if !sameSize || image.layout != .yuv(beforeTurn) {
            do {
                let scaler = try ImageScaler(
                    from: image.layout, width: image.width, height: image.height, to: .yuv(beforeTurn), width: width,
                    height: height, filter: options.filter == .area ? .area : .lanczos)
                planes = try scaler.scale(image)
            } catch let error as FFmpegError {
                throw fail(.scale, "swscale failed: \(error.description)")
            }
        }
        return orientation == 1 ? planes : planes.oriented(orientation)
    }

    /// The output subsampling as it must be before the orientation is applied: a 90° turn transposes it.
    private func subsamplingBeforeTurn(gray: Bool, orientation: Int) -> ChromaSubsampling {
        let target: ChromaSubsampling = gray ? .gray : options.subsampling.native
        return PlanarImage.swapsAxes(orientation) ? (target.transposed ?? target) : target
    }

    /// The size before rotation after `max_dimension` (long edge), keeping the aspect ratio.
    private func targetSize(_ width: Int, _ height: Int) -> (Int, Int) {
        guard let limit = options.maxDimension, max(width, height) > limit else { return (width, height) }
        let scale = Double(limit) / Double(max(width, height))
        return (
            max(1, Int((Double(width) * scale).rounded())), max(1, Int((Double(height) * scale).rounded()))
        )
    }

    // MARK: - Metadata

    /// The APPn segments the new JPEG gets under the metadata policy; the ICC profile always.
    private func metadataSegments(_ source: Source, rebuildEXIF: Bool, width: Int, height: Int) -> [[UInt8]] {
        var segments: [[UInt8]] = []
        switch options.metadata {
        case .strip:
            break
        case .keep:
            if let exif = exifSegment(source, rebuild: rebuildEXIF || source.format != .jpeg, width, height, gps: true)
            {
                segments.append(exif)
            }
            let xmp = source.segments?.xmp ?? []
            segments += rebuildEXIF ? xmp.map(Self.uprightXMP) : xmp
            segments += (source.segments?.iptc ?? []) + (source.segments?.comments ?? [])
        case .keepExceptGPS:
            if let exif = exifSegment(source, rebuild: true, width, height, gps: false) { segments.append(exif) }
            segments += (source.segments?.iptc ?? []) + (source.segments?.comments ?? [])
        }
        if let icc = source.iccProfile, let iccSegments = JPEGSegments.iccSegments(icc) { segments += iccSegments }
        return segments
    }

    private func exifSegment(_ source: Source, rebuild: Bool, _ width: Int, _ height: Int, gps: Bool) -> [UInt8]? {
        if !rebuild, let payload = source.exifPayload { return JPEGSegments.segment(marker: 0xE1, payload: payload) }
        guard let exif = source.exif,
            let payload = exif.rewrittenForReencode(width: width, height: height, removeGPS: !gps)
        else { return nil }
        // Over 64 KiB (a huge maker note) cannot be one APP1 segment: the photo goes without EXIF.
        return JPEGSegments.segment(marker: 0xE1, payload: payload)
    }

    /// The original JPEG's coded image with its metadata replaced per policy: no pixel is re-encoded.
    private func rewriteMetadata(_ original: [UInt8], segments: JPEGSegments, source: Source) -> [[UInt8]] {
        if options.metadata == .keep { return [original] }
        let kept = metadataSegments(source, rebuildEXIF: false, width: source.width, height: source.height)
        return [[0xFF, 0xD8]] + (segments.jfif.map { [$0] } ?? []) + kept
            + [JPEGSegments.strippedBody(original, bodyStart: segments.bodyStart)]
    }

    /// XMP's `tiff:Orientation` set to 1 in place (one digit for one digit, so the segment length holds), so XMP
    /// readers do not turn the already upright pixels again.
    static func uprightXMP(_ segment: [UInt8]) -> [UInt8] {
        var bytes = segment
        let key = Array("tiff:Orientation".utf8)
        var index = 0
        while index + key.count + 2 < bytes.count {
            if bytes[index..<index + key.count].elementsEqual(key) {
                var digit = index + key.count
                while digit < bytes.count,
                    [UInt8(ascii: "="), UInt8(ascii: "\""), UInt8(ascii: "'"), UInt8(ascii: ">"), UInt8(ascii: " ")]
                        .contains(bytes[digit])
                {
                    digit += 1
                }
                if digit < bytes.count, (UInt8(ascii: "2")...UInt8(ascii: "8")).contains(bytes[digit]) {
                    bytes[digit] = UInt8(ascii: "1")
                }
                index = digit
            } else {
                index += 1
            }
        }
        return bytes
    }

    // MARK: - Files and rules

    private func readWhole(_ path: String) throws -> [UInt8] {
        do {
            return try StillFile.read(path: path, limit: Int(options.maxBytes.bytes))
        } catch let refusal as StillFile.ReadRefusal {
            switch refusal {
            case .tooLarge(let size, _): throw tooLarge(size)
            case .changedWhileReading(let expected, let read):
                throw fail(.unreadable, "file changed while being read (\(expected) bytes expected, \(read) read)")
            case .notRegularFile: throw fail(.unreadable, "not a regular file")
            }
        } catch let error as SystemError {
            throw fail(.unreadable, "\(error.call): \(error.message)")
        }
    }

    private func tooLarge(_ size: Int) -> ItemFailed {
        fail(
            .maxBytes, "file is larger than \(options.maxBytes), the most the jpeg stage reads into memory",
            expected: "≤ \(options.maxBytes.bytes) bytes", actual: "\(size) bytes (\(ByteSize.format(Int64(size))))")
    }

    /// The decompression-bomb guard: runs on header values, before any pixel buffer exists.
    private func checkPixels(_ width: Int, _ height: Int) throws {
        if width <= 0 || height <= 0 {
            throw fail(
                .dimensions, "the header says \(width)×\(height): an image without pixels", expected: "at least 1×1",
                actual: "\(width)×\(height)")
        }
        let pixels = width.multipliedReportingOverflow(by: height)
        if pixels.overflow || pixels.partialValue > options.maxPixels {
            throw fail(
                .maxPixels, "the header says \(width)×\(height), more pixels than max_pixels allows",
                expected: "≤ \(options.maxPixels) pixels", actual: "\(width)×\(height) = \(width * height) pixels")
        }
    }

    private func write(_ chunks: [[UInt8]], to path: String) throws {
        do {
            try StillFile.makeDirectories((path as NSString).deletingLastPathComponent)
            try StillFile.writeAtomically(chunks, to: path)
        } catch let error as SystemError {
            throw fail(.output, "cannot write \(path): \(error.call): \(error.message)")
        }
    }

    private func fileSize(_ path: String) -> Int64? {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value
    }

    private func fail(_ rule: RuleName, _ message: String, expected: String? = nil, actual: String? = nil) -> ItemFailed
    {
        ItemFailed(stage: stage, rule: rule, message: message, expected: expected, actual: actual)
    }
}

extension PlanarImage {
    /// "4:2:0", "grayscale" … for the fact.
    fileprivate var subsamplingName: String {
        if case .yuv(let subsampling) = layout { return subsampling.description }
        return "rgb"
    }
}
