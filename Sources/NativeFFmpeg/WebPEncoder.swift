internal import CFFmpeg

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Lossy WebP pictures through libavcodec's `libwebp` encoder (Debian's FFmpeg links libwebp): one packed-RGB
/// picture in, one whole WebP file (`RIFF….WEBP`) out, as libwebp's memory writer makes it. The picture goes in as
/// BGRA and libwebp makes its own limited-range YUV (what VP8 decoders expect); its notice that it does so, and any
/// line under error level, stays off stderr, while an error's lines go into the thrown error.
package enum WebPEncoder {
    /// `rgb`: packed 8-bit RGB rows of `width * 3` bytes; `quality` 0…100 (libwebp's scale, as JPEG's).
    package static func encode(rgb: [UInt8], width: Int, height: Int, quality: Int) throws -> [UInt8] {
        let (result, lines) = FFmpegLog.capturingErrors {
            Result { try encodeCaptured(rgb: rgb, width: width, height: height, quality: quality) }
        }
        switch result {
        case .success(let bytes): return bytes
        case .failure(var error as FFmpegError) where !lines.isEmpty:
            error.message += ": " + lines.joined(separator: "; ")
            throw error
        case .failure(let error): throw error
        }
    }

    private static func encodeCaptured(rgb: [UInt8], width: Int, height: Int, quality: Int) throws -> [UInt8] {
        guard width > 0, height > 0, width <= 16_383, height <= 16_383, rgb.count >= width * height * 3 else {
            throw FFmpegError(
                call: "libwebp", code: FFmpegErrorCode(posix: EINVAL),
                message: "a WebP picture is 1…16383 pixels a side, asked for \(width)×\(height)")
        }
        guard let codec = avcodec_find_encoder_by_name("libwebp") else {
            throw FFmpegError(
                call: "avcodec_find_encoder_by_name", code: FFmpegErrorCode(posix: ENOSYS),
                message: "this FFmpeg has no libwebp encoder")
        }
        let context = try CodecContext(codec: codec)
        context.pointer.pointee.width = Int32(width)
        context.pointer.pointee.height = Int32(height)
        // AV_PIX_FMT_RGB32: B, G, R, A in memory on little-endian machines.
        context.pointer.pointee.pix_fmt = AV_PIX_FMT_BGRA
        context.pointer.pointee.time_base = AVRational(num: 1, den: 1)
        var options: OpaquePointer? = nil
        defer { av_dict_free(&options) }
        av_dict_set(&options, "quality", String(min(max(quality, 0), 100)), 0)
        try ffmpegCall("avcodec_open2(libwebp)") { avcodec_open2(context.pointer, codec, &options) }

        let frame = try bgraFrame(rgb, width: width, height: height)
        try ffmpegCall("avcodec_send_frame") { avcodec_send_frame(context.pointer, frame.pointer) }
        try ffmpegCall("avcodec_send_frame(flush)") { avcodec_send_frame(context.pointer, nil) }
        let packet = try MediaPacket()
        try ffmpegCall("avcodec_receive_packet") { avcodec_receive_packet(context.pointer, packet.pointer) }
        guard let data = packet.pointer.pointee.data, packet.size > 12 else {
            throw FFmpegError(call: "avcodec_receive_packet", code: .invalidData, message: "libwebp gave no picture")
        }
        return Array(UnsafeBufferPointer(start: data, count: packet.size))
    }

    /// `rgb` copied into a new BGRA frame (`av_frame_get_buffer`), opaque.
    private static func bgraFrame(_ rgb: [UInt8], width: Int, height: Int) throws -> MediaFrame {
        let frame = try MediaFrame()
        frame.pointer.pointee.width = Int32(width)
        frame.pointer.pointee.height = Int32(height)
        frame.pointer.pointee.format = AV_PIX_FMT_BGRA.rawValue
        frame.pointer.pointee.pts = 0
        try ffmpegCall("av_frame_get_buffer") { av_frame_get_buffer(frame.pointer, 0) }
        guard let base = frame.pointer.pointee.data.0 else {
            throw FFmpegError(call: "av_frame_get_buffer", code: .outOfMemory)
        }
        let stride = Int(frame.pointer.pointee.linesize.0)
        rgb.withUnsafeBufferPointer { source in
            for y in 0..<height {
                let row = base + y * stride
                for x in 0..<width {
                    let from = (y * width + x) * 3
                    row[4 * x] = source[from + 2]
                    row[4 * x + 1] = source[from + 1]
                    row[4 * x + 2] = source[from]
                    row[4 * x + 3] = 255
                }
            }
        }
        return frame
    }
}

/// Decodes a whole WebP file held in memory with FFmpeg's own `webp` decoder, as `PNGDecoder` does PNG.
package enum WebPDecoder {
    package static func decode(_ webp: [UInt8], maxPixels: Int) throws -> DecodedStill {
        try PNGDecoder.decode(webp, maxPixels: maxPixels, codec: AV_CODEC_ID_WEBP)
    }
}
