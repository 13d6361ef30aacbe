internal import CTurboJPEG
import NativeSystem

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A failed TurboJPEG call: the function, and TurboJPEG's own text (`tjGetErrorStr2`), kept verbatim so a report
/// shows e.g. "Corrupt JPEG data: bad Huffman code" rather than a generic "decode failed".
package struct TurboJPEGError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The C function that failed (`tjDecompressToYUVPlanes`).
    package var call: String
    /// TurboJPEG's text for the failure.
    package var message: String
    /// True when libjpeg only warned (`TJERR_WARNING`: truncated data, a bad Huffman code …); the image it produced
    /// is damaged, so the caller decides whether that is acceptable.
    package var isWarning: Bool

    package init(call: String, message: String, isWarning: Bool) {
        self.call = call
        self.message = message
        self.isWarning = isWarning
    }

    package var description: String { "\(call): \(message)" }
}

extension ChromaSubsampling {
    var tjValue: Int32 {
        switch self {
        case .s444: Int32(TJSAMP_444.rawValue)
        case .s422: Int32(TJSAMP_422.rawValue)
        case .s420: Int32(TJSAMP_420.rawValue)
        case .s440: Int32(TJSAMP_440.rawValue)
        case .s411: Int32(TJSAMP_411.rawValue)
        case .gray: Int32(TJSAMP_GRAY.rawValue)
        }
    }

    init?(tjValue: Int32) {
        switch tjValue {
        case Int32(TJSAMP_444.rawValue): self = .s444
        case Int32(TJSAMP_422.rawValue): self = .s422
        case Int32(TJSAMP_420.rawValue): self = .s420
        case Int32(TJSAMP_440.rawValue): self = .s440
        case Int32(TJSAMP_411.rawValue): self = .s411
        case Int32(TJSAMP_GRAY.rawValue): self = .gray
        default: return nil
        }
    }
}

/// What `tjDecompressHeader3` reads: enough to decide (size, pixel count, colour space) before any pixel buffer
/// is allocated.
package struct JPEGHeader: Sendable, Hashable {
    package var width: Int
    package var height: Int
    /// nil for a subsampling TurboJPEG cannot name (it then refuses planar decoding).
    package var subsampling: ChromaSubsampling?
    /// True for CMYK/YCCK files (print workflows), which TurboJPEG cannot turn into YCbCr.
    package var isCMYK: Bool
}

/// One TurboJPEG decompressor (`tjInitDecompress`); `deinit` calls `tjDestroy`. Not thread-safe: one per worker.
package final class TurboJPEGDecompressor {
    private let handle: UnsafeMutableRawPointer

    package init() throws {
        guard let handle = tjInitDecompress() else {
            throw TurboJPEGError(call: "tjInitDecompress", message: Self.globalErrorText(), isWarning: false)
        }
        self.handle = handle
    }

    deinit { tjDestroy(handle) }

    /// Reads the frame header (`tjDecompressHeader3`) without decoding anything.
    package func header(of jpeg: [UInt8]) throws -> JPEGHeader {
        var width: Int32 = 0
        var height: Int32 = 0
        var subsampling: Int32 = -1
        var colorspace: Int32 = -1
        let result = jpeg.withUnsafeBufferPointer { buffer in
            tjDecompressHeader3(
                handle, buffer.baseAddress, UInt(buffer.count), &width, &height, &subsampling, &colorspace)
        }
        if result != 0 { throw error("tjDecompressHeader3") }
        let cmyk = colorspace == Int32(TJCS_CMYK.rawValue) || colorspace == Int32(TJCS_YCCK.rawValue)
        return JPEGHeader(
            width: Int(width), height: Int(height), subsampling: ChromaSubsampling(tjValue: subsampling),
            isCMYK: cmyk)
    }

    /// Decodes straight to Y, Cb, Cr planes in the file's own subsampling (`tjDecompressToYUVPlanes`), skipping
    /// the colour conversion to RGB. `width`/`height` may be a scaled size TurboJPEG supports (1/2, 1/4, 1/8):
    /// the IDCT then produces the smaller image directly. Warnings (truncated data, bad Huffman codes) throw.
    package func decodeToPlanes(
        _ jpeg: [UInt8], subsampling: ChromaSubsampling, width: Int, height: Int
    ) throws -> PlanarImage {
        var image = PlanarImage(yuvWidth: width, height: height, subsampling: subsampling)
        let geometry = image.planes
        var strides = geometry.map { Int32($0.stride) }
        try strictly("tjDecompressToYUVPlanes") { flags in
            jpeg.withUnsafeBufferPointer { source in
                image.storage.withUnsafeMutableBufferPointer { storage -> Int32 in
                    guard let base = storage.baseAddress else { return -1 }
                    var planes: [UnsafeMutablePointer<UInt8>?] = geometry.map { base + $0.offset }
                    while planes.count < 3 { planes.append(nil) }
                    return planes.withUnsafeMutableBufferPointer { planePointers in
                        tjDecompressToYUVPlanes(
                            handle, source.baseAddress, UInt(source.count), planePointers.baseAddress, Int32(width),
                            &strides, Int32(height), flags)
                    }
                }
            }
        }
        return image
    }

    /// Decodes to packed RGB (`tjDecompress2`) with libjpeg's own chroma upsampling: the first half of what
    /// `djpeg | cjpeg` does, used when the output subsampling differs from the file's, so chroma is resampled the
    /// way the reference tools do it. `width`/`height` may be a scaled size as for `decodeToPlanes`.
    package func decodeToRGB(_ jpeg: [UInt8], width: Int, height: Int) throws -> PlanarImage {
        var image = PlanarImage(packedWidth: width, height: height, alpha: false)
        let stride = image.planes[0].stride
        try strictly("tjDecompress2") { flags in
            jpeg.withUnsafeBufferPointer { source in
                image.storage.withUnsafeMutableBufferPointer { target -> Int32 in
                    guard let base = target.baseAddress else { return -1 }
                    return tjDecompress2(
                        handle, source.baseAddress, UInt(source.count), base, Int32(width), Int32(stride),
                        Int32(height), Int32(TJPF_RGB.rawValue), flags)
                }
            }
        }
        return image
    }

    /// The scaled sizes TurboJPEG can decode to directly (`tjGetScalingFactors`), as num/denom pairs ≤ 1.
    package static var reducingScaleFactors: [(numerator: Int, denominator: Int)] {
        var count: Int32 = 0
        guard let factors = tjGetScalingFactors(&count) else { return [] }
        return (0..<Int(count)).map { (Int(factors[$0].num), Int(factors[$0].denom)) }
            .filter { $0.numerator <= $0.denominator }
    }

    /// Runs a decode that stops at the first libjpeg warning (`TJFLAG_STOPONWARNING`) and throws it: a truncated
    /// or corrupt file must fail, not become a half-grey photo. No warning is treated as harmless: with the whole
    /// file in memory libjpeg-turbo's fast Huffman decoder skips bad codes silently, and "extraneous bytes before
    /// marker" may then be the only sign of a corrupt entropy-coded segment.
    private func strictly(_ call: String, _ decode: (Int32) -> Int32) throws {
        if decode(TJFLAG_ACCURATEDCT | TJFLAG_STOPONWARNING) != 0 { throw error(call) }
    }

    private func error(_ call: String) -> TurboJPEGError {
        TurboJPEGError(
            call: call, message: String(cString: tjGetErrorStr2(handle)),
            isWarning: tjGetErrorCode(handle) == Int32(TJERR_WARNING.rawValue))
    }

    fileprivate static func globalErrorText() -> String { String(cString: tjGetErrorStr2(nil)) }
}

/// One TurboJPEG compressor (`tjInitCompress`); `deinit` calls `tjDestroy`. Not thread-safe: one per worker.
package final class TurboJPEGCompressor {
    fileprivate let handle: UnsafeMutableRawPointer

    package init() throws {
        guard let handle = tjInitCompress() else {
            throw TurboJPEGError(
                call: "tjInitCompress", message: TurboJPEGDecompressor.globalErrorText(), isWarning: false)
        }
        self.handle = handle
    }

    deinit { tjDestroy(handle) }

    /// Encodes Y, Cb, Cr planes as they are (`tjCompressFromYUVPlanes`): no colour conversion, no resampling; the
    /// JPEG gets the planes' own subsampling. `quality` is libjpeg's 1…100.
    package func compress(_ image: PlanarImage, quality: Int, progressive: Bool) throws -> [UInt8] {
        guard case .yuv(let subsampling) = image.layout else {
            throw TurboJPEGError(
                call: "tjCompressFromYUVPlanes", message: "image is not planar YCbCr", isWarning: false)
        }
        let geometry = image.planes
        var strides = geometry.map { Int32($0.stride) }
        var output: UnsafeMutablePointer<UInt8>? = nil
        var outputSize: UInt = 0
        defer { if let output { tjFree(output) } }
        // TurboJPEG picks the fast, less accurate forward DCT below quality 96 unless told otherwise; cjpeg and
        // libjpeg default to the accurate one, which costs little and matches their output.
        let flags: Int32 = TJFLAG_ACCURATEDCT | (progressive ? TJFLAG_PROGRESSIVE : 0)
        let result = image.storage.withUnsafeBufferPointer { storage -> Int32 in
            guard let base = storage.baseAddress else { return -1 }
            var planes: [UnsafePointer<UInt8>?] = geometry.map { base + $0.offset }
            while planes.count < 3 { planes.append(nil) }
            return planes.withUnsafeMutableBufferPointer { planePointers in
                tjCompressFromYUVPlanes(
                    handle, planePointers.baseAddress, Int32(image.width), &strides, Int32(image.height),
                    subsampling.tjValue, &output, &outputSize, Int32(quality), flags)
            }
        }
        if result != 0 {
            throw TurboJPEGError(
                call: "tjCompressFromYUVPlanes", message: String(cString: tjGetErrorStr2(handle)),
                isWarning: tjGetErrorCode(handle) == Int32(TJERR_WARNING.rawValue))
        }
        guard let output else {
            throw TurboJPEGError(call: "tjCompressFromYUVPlanes", message: "no output buffer", isWarning: false)
        }
        return Array(UnsafeBufferPointer(start: output, count: Int(outputSize)))
    }
}

extension TurboJPEGCompressor {
    /// Packed RGB to Y, Cb, Cr planes in `subsampling` (`tjEncodeYUVPlanes`): libjpeg's colour conversion and
    /// chroma downsampling, exactly what cjpeg applies, without the entropy coding.
    package func planes(from rgb: PlanarImage, subsampling: ChromaSubsampling) throws -> PlanarImage {
        guard rgb.layout == .rgb24, let plane = rgb.planes.first else {
            throw TurboJPEGError(call: "tjEncodeYUVPlanes", message: "image is not packed RGB", isWarning: false)
        }
        var output = PlanarImage(yuvWidth: rgb.width, height: rgb.height, subsampling: subsampling)
        let geometry = output.planes
        var strides = geometry.map { Int32($0.stride) }
        let result = rgb.storage.withUnsafeBufferPointer { source in
            output.storage.withUnsafeMutableBufferPointer { target -> Int32 in
                guard let sourceBase = source.baseAddress, let base = target.baseAddress else { return -1 }
                var planes: [UnsafeMutablePointer<UInt8>?] = geometry.map { base + $0.offset }
                while planes.count < 3 { planes.append(nil) }
                return planes.withUnsafeMutableBufferPointer { planePointers in
                    tjEncodeYUVPlanes(
                        handle, sourceBase + plane.offset, Int32(rgb.width), Int32(plane.stride), Int32(rgb.height),
                        Int32(TJPF_RGB.rawValue), planePointers.baseAddress, &strides, subsampling.tjValue, 0)
                }
            }
        }
        if result != 0 {
            throw TurboJPEGError(
                call: "tjEncodeYUVPlanes", message: String(cString: tjGetErrorStr2(handle)),
                isWarning: tjGetErrorCode(handle) == Int32(TJERR_WARNING.rawValue))
        }
        output.replicateEdges()
        return output
    }
}

extension TurboJPEGCompressor {
    /// `libjpeg-turbo 2.1.5 (built with)`: libjpeg-turbo 2.x has no runtime version call, so this is the version
    /// built against.
    package static var libraryVersion: String {
        let turbo = Int(LIBJPEG_TURBO_VERSION_NUMBER)
        return "libjpeg-turbo \(turbo / 1_000_000).\(turbo / 1000 % 1000).\(turbo % 1000) (built with)"
    }
}
