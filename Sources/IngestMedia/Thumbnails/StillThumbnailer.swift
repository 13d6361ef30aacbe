import NativeExif
import NativeFFmpeg
import NativeHEIF
import NativeJPEG
import NativeSystem

/// Thumbnails of stills with the decoders the `jpeg` stage uses: TurboJPEG (a scaled IDCT, so a 24 MP photo is
/// decoded at 1/8 size), FFmpeg's PNG decoder and libheif; swscale (area averaging) makes the final size and EXIF
/// orientation is applied, so a portrait photo shows upright. Memory is the file plus the decoded picture, which
/// `maxPixels` bounds before any decode.
package enum StillThumbnailer {
    /// Why a still has no thumbnail: the library's own text.
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    /// Files larger than this are not read into memory for a thumbnail.
    package static let maxBytes = 256 << 20

    /// A JPEG's thumbnail, turned by its EXIF orientation.
    package static func jpeg(path: String, maxPixels: Int = 200_000_000) throws -> Thumbnail {
        let bytes = try read(path)
        let decompressor = try TurboJPEGDecompressor()
        let header = try decompressor.header(of: bytes)
        try check(header.width, header.height, maxPixels: maxPixels)
        let target = Thumbnail.fitting(width: header.width, height: header.height)
        // The smallest of TurboJPEG's scaled sizes that still covers the target: the IDCT does most of the work.
        var decode = (header.width, header.height)
        for denominator in [8, 4, 2] {
            let scaled = (
                (header.width + denominator - 1) / denominator, (header.height + denominator - 1) / denominator
            )
            if scaled.0 >= target.width, scaled.1 >= target.height {
                decode = scaled
                break
            }
        }
        let image = try decompressor.decodeToRGB(bytes, width: decode.0, height: decode.1)
        let orientation = ExifData(jpegFileAt: path)?.orientation ?? 1
        return try scaled(image).oriented(orientation)
    }

    /// A PNG's thumbnail (transparency composited over white).
    package static func png(path: String, maxPixels: Int = 50_000_000) throws -> Thumbnail {
        let bytes = try read(path)
        guard bytes.count >= 24 else { throw Failure(description: "PNG is too short for its header") }
        let width = bytes[16..<20].reduce(0) { $0 << 8 | Int($1) }
        let height = bytes[20..<24].reduce(0) { $0 << 8 | Int($1) }
        try check(width, height, maxPixels: maxPixels)
        let decoded = try PNGDecoder.decode(bytes, maxPixels: maxPixels)
        return try scaled(decoded.image)
    }

    /// A WebP's thumbnail (a poster or sheet written as WebP): FFmpeg's webp decoder, whose `max_pixels` is the
    /// guard (the VP8 header's size is not parsed here).
    package static func webp(path: String, maxPixels: Int = 50_000_000) throws -> Thumbnail {
        try scaled(try WebPDecoder.decode(try read(path), maxPixels: maxPixels).image)
    }

    /// A HEIF/HEIC's thumbnail: libheif applies the file's rotation and mirror boxes itself.
    package static func heif(path: String, maxPixels: Int = 200_000_000) throws -> Thumbnail {
        let heif = try HEIFImage(path: path)
        try check(heif.width, heif.height, maxPixels: maxPixels)
        return try heif.withDecodedInterleavedRGB { width, height, stride, bytes in
            let image = PlanarImage(packedRGB: [UInt8](bytes), width: width, height: height, stride: stride)
            return try scaled(image)
        }
    }

    /// Packed RGB of any size to at most `Thumbnail.maxSide` (swscale, area averaging), as tight rows.
    package static func scaled(_ image: PlanarImage) throws -> Thumbnail {
        let source = image.layout == .rgba ? image.compositedOverWhite() : image
        guard source.layout == .rgb24 else { throw Failure(description: "not an RGB image") }
        let target = Thumbnail.fitting(width: source.width, height: source.height)
        var output = source
        if target.width != source.width || target.height != source.height {
            let scaler = try ImageScaler(
                from: .rgb24, width: source.width, height: source.height, to: .rgb24, width: target.width,
                height: target.height, filter: .area)
            output = try scaler.scale(source)
        }
        return Thumbnail(
            width: output.width, height: output.height, stride: output.planes[0].stride, rows: output.storage)
    }

    private static func read(_ path: String) throws -> [UInt8] {
        do {
            return try StillFile.read(path: path, limit: maxBytes)
        } catch let refusal as StillFile.ReadRefusal {
            throw Failure(description: "not read: \(refusal)")
        }
    }

    private static func check(_ width: Int, _ height: Int, maxPixels: Int) throws {
        guard width > 0, height > 0, width.multipliedReportingOverflow(by: height).partialValue <= maxPixels,
            width <= 1 << 20, height <= 1 << 20
        else { throw Failure(description: "\(width)×\(height) is too many pixels for a thumbnail") }
    }
}
