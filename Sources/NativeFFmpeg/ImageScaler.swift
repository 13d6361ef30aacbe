internal import CFFmpeg
import NativeSystem

/// The resampling filter of an `ImageScaler`.
package enum ScaleFilter: Sendable {
    /// Lanczos (`SWS_LANCZOS`): sharp, and swscale widens it for large reductions, so no aliasing.
    case lanczos
    /// Area averaging (`SWS_AREA`): a box filter, softer, cheap.
    case area
}

/// One swscale context (`sws_getContext`) for one conversion: size and/or layout, e.g. 4000×3000 4:2:0 to
/// 1600×1200 4:2:0, or RGB to 4:2:0 for stills, or a decoded video frame (any pixel format) to the encoder's
/// yuv420p size. `deinit` calls `sws_freeContext`. Stills are BT.601 full range on both sides (JPEG's YCbCr);
/// video keeps its matrix and goes to limited range, as H.264 players expect.
package final class ImageScaler {
    private let context: OpaquePointer
    /// Pixel format and size in and out, as swscale knows them.
    let sourceFormat: (format: AVPixelFormat, width: Int, height: Int)
    let targetFormat: (format: AVPixelFormat, width: Int, height: Int)
    /// The still layouts, when made for stills.
    private let stillLayouts: (source: PixelLayout, target: PixelLayout)?

    package var source: (layout: PixelLayout?, width: Int, height: Int) {
        (stillLayouts?.source, sourceFormat.width, sourceFormat.height)
    }
    package var target: (layout: PixelLayout?, width: Int, height: Int) {
        (stillLayouts?.target, targetFormat.width, targetFormat.height)
    }

    package init(
        from sourceLayout: PixelLayout, width sourceWidth: Int, height sourceHeight: Int,
        to targetLayout: PixelLayout, width targetWidth: Int, height targetHeight: Int, filter: ScaleFilter = .lanczos
    ) throws {
        guard let sourceFormat = Self.pixelFormat(sourceLayout), let targetFormat = Self.pixelFormat(targetLayout)
        else {
            throw FFmpegError(
                call: "sws_getContext", code: FFmpegErrorCode(posix: EINVAL),
                message: "no swscale pixel format for \(sourceLayout) → \(targetLayout)")
        }
        let flags: Int32 =
            (filter == .lanczos ? SWS_LANCZOS : SWS_AREA) | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT | SWS_FULL_CHR_H_INP
        context = try Self.makeContext(
            (sourceFormat, sourceWidth, sourceHeight), (targetFormat, targetWidth, targetHeight), flags: flags)
        self.sourceFormat = (sourceFormat, sourceWidth, sourceHeight)
        self.targetFormat = (targetFormat, targetWidth, targetHeight)
        stillLayouts = (sourceLayout, targetLayout)
        let coefficients = sws_getCoefficients(SWS_CS_ITU601)
        // Full range in and out: JPEG's YCbCr uses all 0…255, unlike video's 16…235.
        _ = sws_setColorspaceDetails(context, coefficients, 1, coefficients, 1, 0, 1 << 16, 1 << 16)
    }

    /// A scaler for decoded video frames shaped like `frame` to yuv420p at `width`×`height` (bicubic, what
    /// FFmpeg's `scale` filter uses by default). Full-range (JPEG) input is mapped to limited range.
    package init(videoFrom frame: MediaFrame, width targetWidth: Int, height targetHeight: Int) throws {
        let source = frame.pointer.pointee
        let format = AVPixelFormat(rawValue: source.format)
        let flags: Int32 = SWS_BICUBIC
        context = try Self.makeContext(
            (format, Int(source.width), Int(source.height)), (AV_PIX_FMT_YUV420P, targetWidth, targetHeight),
            flags: flags)
        sourceFormat = (format, Int(source.width), Int(source.height))
        targetFormat = (AV_PIX_FMT_YUV420P, targetWidth, targetHeight)
        stillLayouts = nil
        let fullRange: Int32 =
            source.color_range == AVCOL_RANGE_JPEG
                || [AV_PIX_FMT_YUVJ420P, AV_PIX_FMT_YUVJ422P, AV_PIX_FMT_YUVJ444P]
                    .contains(format)
            ? 1 : 0
        let matrix = source.colorspace == AVCOL_SPC_BT709 ? SWS_CS_ITU709 : SWS_CS_DEFAULT
        let coefficients = sws_getCoefficients(matrix)
        _ = sws_setColorspaceDetails(context, coefficients, fullRange, coefficients, 0, 0, 1 << 16, 1 << 16)
    }

    private static func makeContext(
        _ source: (AVPixelFormat, Int, Int), _ target: (AVPixelFormat, Int, Int), flags: Int32
    ) throws -> OpaquePointer {
        guard
            let context = sws_getContext(
                Int32(source.1), Int32(source.2), source.0, Int32(target.1), Int32(target.2), target.0, flags, nil,
                nil, nil)
        else {
            let names = [source.0, target.0].map { av_get_pix_fmt_name($0).map { String(cString: $0) } ?? "unknown" }
            throw FFmpegError(
                call: "sws_getContext", code: FFmpegErrorCode(posix: EINVAL),
                message: "swscale cannot convert \(source.1)×\(source.2) \(names[0]) to "
                    + "\(target.1)×\(target.2) \(names[1])")
        }
        return context
    }

    /// True when `frame` has the size and pixel format this scaler was made for (a stream may change mid-way).
    package func accepts(_ frame: MediaFrame) -> Bool {
        let source = frame.pointer.pointee
        return source.format == sourceFormat.format.rawValue && Int(source.width) == sourceFormat.width
            && Int(source.height) == sourceFormat.height
    }

    /// Scales a decoded video `frame` into `output` (fresh buffers each time: the encoder may still hold a
    /// reference to the previous ones), carrying over the timestamp.
    package func scale(_ frame: MediaFrame, into output: MediaFrame) throws {
        guard accepts(frame) else {
            throw FFmpegError(
                call: "sws_scale_frame", code: FFmpegErrorCode(posix: EINVAL),
                message: "frame is \(frame.width)×\(frame.height), scaler expects "
                    + "\(sourceFormat.width)×\(sourceFormat.height)")
        }
        output.unref()
        let out = output.pointer
        out.pointee.format = targetFormat.format.rawValue
        out.pointee.width = Int32(targetFormat.width)
        out.pointee.height = Int32(targetFormat.height)
        try ffmpegCall("av_frame_get_buffer") { av_frame_get_buffer(out, 0) }
        try ffmpegCall("sws_scale_frame") { sws_scale_frame(context, out, frame.pointer) }
        out.pointee.pts = frame.pointer.pointee.pts
        out.pointee.sample_aspect_ratio = frame.pointer.pointee.sample_aspect_ratio
    }

    deinit { sws_freeContext(context) }

    /// Converts `image` (which must match the source this scaler was made for) into a new image of the target
    /// size and layout (`sws_scale`).
    package func scale(_ image: PlanarImage) throws -> PlanarImage {
        guard let layouts = stillLayouts, image.layout == layouts.source, image.width == source.width,
            image.height == source.height
        else {
            throw FFmpegError(
                call: "sws_scale", code: FFmpegErrorCode(posix: EINVAL),
                message: "image is \(image.width)×\(image.height) \(image.layout), scaler expects "
                    + "\(source.width)×\(source.height) \(stillLayouts.map { "\($0.source)" } ?? "video")")
        }
        var output: PlanarImage
        switch layouts.target {
        case .yuv(let subsampling):
            output = PlanarImage(yuvWidth: target.width, height: target.height, subsampling: subsampling)
        case .rgb24: output = PlanarImage(packedWidth: target.width, height: target.height, alpha: false)
        case .rgba: output = PlanarImage(packedWidth: target.width, height: target.height, alpha: true)
        }
        let sourceGeometry = image.planes
        let targetGeometry = output.planes
        let result = image.storage.withUnsafeBufferPointer { sourceBuffer in
            output.storage.withUnsafeMutableBufferPointer { targetBuffer -> Int32 in
                guard let sourceBase = sourceBuffer.baseAddress, let targetBase = targetBuffer.baseAddress else {
                    return -1
                }
                var sourcePlanes: [UnsafePointer<UInt8>?] = sourceGeometry.map { UnsafePointer(sourceBase + $0.offset) }
                var sourceStrides = sourceGeometry.map { Int32($0.stride) }
                var targetPlanes: [UnsafeMutablePointer<UInt8>?] = targetGeometry.map { targetBase + $0.offset }
                var targetStrides = targetGeometry.map { Int32($0.stride) }
                while sourcePlanes.count < 4 {
                    sourcePlanes.append(nil)
                    sourceStrides.append(0)
                }
                while targetPlanes.count < 4 {
                    targetPlanes.append(nil)
                    targetStrides.append(0)
                }
                return sws_scale(
                    context, &sourcePlanes, &sourceStrides, 0, Int32(image.height), &targetPlanes, &targetStrides)
            }
        }
        if result < 0 { throw FFmpegError(call: "sws_scale", code: FFmpegErrorCode(rawValue: result)) }
        if result != Int32(target.height) {
            throw FFmpegError(
                call: "sws_scale", code: FFmpegErrorCode(posix: EIO),
                message: "wrote \(result) of \(target.height) rows")
        }
        if case .yuv = layouts.target { output.replicateEdges() }
        return output
    }

    static func pixelFormat(_ layout: PixelLayout) -> AVPixelFormat? {
        switch layout {
        case .rgb24: AV_PIX_FMT_RGB24
        case .rgba: AV_PIX_FMT_RGBA
        case .yuv(.s444): AV_PIX_FMT_YUV444P
        case .yuv(.s422): AV_PIX_FMT_YUV422P
        case .yuv(.s420): AV_PIX_FMT_YUV420P
        case .yuv(.s440): AV_PIX_FMT_YUV440P
        case .yuv(.s411): AV_PIX_FMT_YUV411P
        case .yuv(.gray): AV_PIX_FMT_GRAY8
        }
    }
}
