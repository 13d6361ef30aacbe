internal import CFFmpeg
internal import CFFmpegShims  // its header includes libavformat: FFmpeg enums may be attributed to this module
import NativeSystem

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A decoded still: pixels plus the ICC profile it carried (PNG `iCCP`), so colour survives the conversion.
package struct DecodedStill: Sendable {
    package var image: PlanarImage
    package var iccProfile: [UInt8]?
}

/// Decodes a whole PNG held in memory with FFmpeg's png decoder (libavcodec), composited over white (JPEG has no
/// alpha). Every FFmpeg resource is owned by a class whose `deinit` frees it, so an early throw leaks nothing.
package enum PNGDecoder {
    /// `maxPixels` is passed to the decoder as `AVCodecContext.max_pixels`: a second guard behind the caller's own
    /// IHDR check, so no frame larger than that is ever allocated.
    package static func decode(_ png: [UInt8], maxPixels: Int) throws -> DecodedStill {
        try decode(png, maxPixels: maxPixels, codec: AV_CODEC_ID_PNG)
    }

    /// A whole still of `codec` (PNG, WebP) held in memory, decoded and composited over white.
    static func decode(_ bytes: [UInt8], maxPixels: Int, codec id: AVCodecID) throws -> DecodedStill {
        guard let codec = avcodec_find_decoder(id) else {
            throw FFmpegError(call: "avcodec_find_decoder", code: .decoderNotFound)
        }
        let context = try CodecContext(codec: codec)
        context.pointer.pointee.max_pixels = Int64(maxPixels)
        context.pointer.pointee.thread_count = 1
        try ffmpegCall("avcodec_open2") { avcodec_open2(context.pointer, codec, nil) }

        let packet = try MediaPacket()
        try ffmpegCall("av_new_packet") { av_new_packet(packet.pointer, Int32(bytes.count)) }
        guard let data = packet.pointer.pointee.data else {
            throw FFmpegError(call: "av_new_packet", code: .outOfMemory)
        }
        bytes.withUnsafeBufferPointer { source in
            if let base = source.baseAddress { data.update(from: base, count: source.count) }
        }
        try ffmpegCall("avcodec_send_packet") { avcodec_send_packet(context.pointer, packet.pointer) }
        // Flush: the decoder hands out its frame at once for a still, but draining is the contract.
        _ = avcodec_send_packet(context.pointer, nil)
        let frame = try MediaFrame()
        try ffmpegCall("avcodec_receive_frame") { avcodec_receive_frame(context.pointer, frame.pointer) }

        let width = Int(frame.pointer.pointee.width)
        let height = Int(frame.pointer.pointee.height)
        guard width > 0, height > 0 else {
            throw FFmpegError(call: "avcodec_receive_frame", code: .invalidData, message: "frame is \(width)×\(height)")
        }
        let rgba = try convertToRGBA(frame.pointer, width: width, height: height)

        var icc: [UInt8]? = nil
        if let side = av_frame_get_side_data(frame.pointer, AV_FRAME_DATA_ICC_PROFILE), let bytes = side.pointee.data,
            side.pointee.size > 0
        {
            icc = Array(UnsafeBufferPointer(start: bytes, count: Int(side.pointee.size)))
        }
        return DecodedStill(image: rgba.compositedOverWhite(), iccProfile: icc)
    }

    /// Whatever the decoder produced (palette, gray + alpha, 16-bit …) as 8-bit RGBA, via swscale.
    private static func convertToRGBA(
        _ frame: UnsafeMutablePointer<AVFrame>, width: Int, height: Int
    ) throws -> PlanarImage {
        let format = AVPixelFormat(rawValue: frame.pointee.format)
        guard
            let scaler = sws_getContext(
                Int32(width), Int32(height), format, Int32(width), Int32(height), AV_PIX_FMT_RGBA, SWS_BICUBIC, nil,
                nil, nil)
        else {
            throw FFmpegError(
                call: "sws_getContext", code: FFmpegErrorCode(posix: EINVAL),
                message: "swscale cannot convert pixel format \(frame.pointee.format) to RGBA")
        }
        defer { sws_freeContext(scaler) }
        var output = PlanarImage(packedWidth: width, height: height, alpha: true)
        let stride = output.planes[0].stride
        let rows = withUnsafePointer(to: &frame.pointee.data) { dataTuple in
            withUnsafePointer(to: &frame.pointee.linesize) { linesizeTuple in
                dataTuple.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { sourcePlanes in
                    linesizeTuple.withMemoryRebound(to: Int32.self, capacity: 8) { sourceStrides in
                        output.storage.withUnsafeMutableBufferPointer { target -> Int32 in
                            var targetPlanes: [UnsafeMutablePointer<UInt8>?] = [target.baseAddress, nil, nil, nil]
                            var targetStrides: [Int32] = [Int32(stride), 0, 0, 0]
                            return sws_scale(
                                scaler, sourcePlanes, sourceStrides, 0, Int32(height), &targetPlanes, &targetStrides)
                        }
                    }
                }
            }
        }
        if rows != Int32(height) {
            throw FFmpegError(
                call: "sws_scale", code: rows < 0 ? FFmpegErrorCode(rawValue: rows) : .ioError,
                message: "converted \(rows) of \(height) rows to RGBA")
        }
        return output
    }
}

/// Owns an `AVCodecContext` (`avcodec_alloc_context3` / `avcodec_free_context`): a still's decoder or encoder.
final class CodecContext {
    var pointer: UnsafeMutablePointer<AVCodecContext>
    init(codec: UnsafePointer<AVCodec>) throws {
        guard let pointer = avcodec_alloc_context3(codec) else {
            throw FFmpegError(call: "avcodec_alloc_context3", code: .outOfMemory)
        }
        self.pointer = pointer
    }
    deinit {
        var optional: UnsafeMutablePointer<AVCodecContext>? = pointer
        avcodec_free_context(&optional)
    }
}
