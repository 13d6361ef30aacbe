internal import CFFmpeg

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension MediaInput {
    /// Seeks to the keyframe at or before `seconds` on stream `stream` (`av_seek_frame`, backward); false when
    /// the container cannot seek.
    package func seek(stream: Int, seconds: Double, timeBase: (num: Int32, den: Int32)) -> Bool {
        guard timeBase.num > 0, timeBase.den > 0, seconds.isFinite, seconds >= 0 else { return false }
        let units = seconds * Double(timeBase.den) / Double(timeBase.num)
        guard units < Double(Int64.max / 2) else { return false }
        return av_seek_frame(context, Int32(stream), Int64(units), AVSEEK_FLAG_BACKWARD) >= 0
    }
}

extension MediaDecoder {
    /// Drops the frames buffered before a seek (`avcodec_flush_buffers`).
    package func flush() { avcodec_flush_buffers(context) }
}

/// One swscale context (`sws_getContext`) from a decoded frame's pixel format and size to packed RGB at a given
/// size (area averaging), with the frame's own matrix and range; `deinit` calls `sws_freeContext`.
package final class FrameRGBScaler {
    private let context: OpaquePointer
    package let width: Int
    package let height: Int

    /// A scaler from `frame`'s format and size to `width`×`height` RGB.
    package init(frame: MediaFrame, width: Int, height: Int) throws {
        let source = frame.pointer.pointee
        (self.width, self.height) = (width, height)
        guard
            let context = sws_getContext(
                source.width, source.height, AVPixelFormat(rawValue: source.format), Int32(width), Int32(height),
                AV_PIX_FMT_RGB24, SWS_AREA | SWS_ACCURATE_RND, nil, nil, nil)
        else {
            throw FFmpegError(
                call: "sws_getContext", code: FFmpegErrorCode(posix: EINVAL),
                message: "swscale cannot convert pixel format \(source.format) to RGB")
        }
        self.context = context
        let fullRange: Int32 = source.color_range == AVCOL_RANGE_JPEG ? 1 : 0
        let matrix = source.colorspace == AVCOL_SPC_BT709 ? SWS_CS_ITU709 : SWS_CS_DEFAULT
        let coefficients = sws_getCoefficients(matrix)
        _ = sws_setColorspaceDetails(context, coefficients, fullRange, coefficients, 1, 0, 1 << 16, 1 << 16)
    }

    deinit { sws_freeContext(context) }

    /// The frame scaled to packed RGB rows, `stride` bytes apart (aligned to 32 for swscale).
    package func scale(_ frame: MediaFrame) throws -> (rows: [UInt8], stride: Int) {
        let stride = (width * 3 + 31) & ~31
        var rows = [UInt8](repeating: 0, count: stride * height)
        let pointer = frame.pointer
        let written = withUnsafePointer(to: &pointer.pointee.data) { dataTuple in
            withUnsafePointer(to: &pointer.pointee.linesize) { linesizeTuple in
                dataTuple.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { sourcePlanes in
                    linesizeTuple.withMemoryRebound(to: Int32.self, capacity: 8) { sourceStrides in
                        rows.withUnsafeMutableBufferPointer { target -> Int32 in
                            var planes: [UnsafeMutablePointer<UInt8>?] = [target.baseAddress, nil, nil, nil]
                            var strides: [Int32] = [Int32(stride), 0, 0, 0]
                            return sws_scale(
                                context, sourcePlanes, sourceStrides, 0, pointer.pointee.height, &planes, &strides)
                        }
                    }
                }
            }
        }
        if written != Int32(height) {
            throw FFmpegError(
                call: "sws_scale", code: written < 0 ? FFmpegErrorCode(rawValue: written) : .ioError,
                message: "scaled \(written) of \(height) rows")
        }
        return (rows, stride)
    }
}
