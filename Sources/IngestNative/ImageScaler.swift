internal import CFFmpeg

/// The resampling filter of an `ImageScaler`.
package enum ScaleFilter: Sendable {
    /// Lanczos (`SWS_LANCZOS`): sharp, and swscale widens it for large reductions, so no aliasing.
    case lanczos
    /// Area averaging (`SWS_AREA`): a box filter, softer, cheap.
    case area
}

/// One swscale context (`sws_getContext`) for one conversion: size and/or layout, e.g. 4000×3000 4:2:0 to
/// 1600×1200 4:2:0, or RGB to 4:2:0. `deinit` calls `sws_freeContext`. Colour is BT.601 full range on both sides
/// (JPEG's YCbCr), set with `sws_setColorspaceDetails`.
package final class ImageScaler {
    private let context: OpaquePointer
    package let source: (layout: PixelLayout, width: Int, height: Int)
    package let target: (layout: PixelLayout, width: Int, height: Int)

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
        guard
            let context = sws_getContext(
                Int32(sourceWidth), Int32(sourceHeight), sourceFormat, Int32(targetWidth), Int32(targetHeight),
                targetFormat, flags, nil, nil, nil)
        else {
            throw FFmpegError(
                call: "sws_getContext", code: FFmpegErrorCode(posix: EINVAL),
                message: "swscale cannot convert \(sourceWidth)×\(sourceHeight) \(sourceLayout) to "
                    + "\(targetWidth)×\(targetHeight) \(targetLayout)")
        }
        self.context = context
        source = (sourceLayout, sourceWidth, sourceHeight)
        target = (targetLayout, targetWidth, targetHeight)
        let coefficients = sws_getCoefficients(SWS_CS_ITU601)
        // Full range in and out: JPEG's YCbCr uses all 0…255, unlike video's 16…235.
        _ = sws_setColorspaceDetails(context, coefficients, 1, coefficients, 1, 0, 1 << 16, 1 << 16)
    }

    deinit { sws_freeContext(context) }

    /// Converts `image` (which must match the source this scaler was made for) into a new image of the target
    /// size and layout (`sws_scale`).
    package func scale(_ image: PlanarImage) throws -> PlanarImage {
        guard image.layout == source.layout, image.width == source.width, image.height == source.height else {
            throw FFmpegError(
                call: "sws_scale", code: FFmpegErrorCode(posix: EINVAL),
                message: "image is \(image.width)×\(image.height) \(image.layout), scaler expects "
                    + "\(source.width)×\(source.height) \(source.layout)")
        }
        var output: PlanarImage
        switch target.layout {
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
        if case .yuv = target.layout { output.replicateEdges() }
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
