internal import CFFmpeg

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A video's thumbnail: a representative frame, not the black first frame many clips open with. It seeks to a few
/// points (15 %, 40 %, 65 % of the duration), decodes the first frame at or after each, and keeps the one whose
/// luma varies most; the display-matrix rotation is applied so a portrait clip shows upright. Opens the file as the
/// probe does (allow-listed demuxer, one open, a deadline over the whole job); holds one decoded frame at a time.
package enum VideoThumbnailer {
    package struct Result: Sendable {
        package var thumbnail: Thumbnail
        /// Seconds, from the container (nil when it does not say).
        package var duration: Double?
        /// Where the chosen frame sits, in seconds.
        package var time: Double
    }

    /// Where the candidate frames are taken, as fractions of the duration.
    package static let positions = [0.15, 0.40, 0.65]
    /// A frame this varied is clearly a picture: the remaining candidates are not decoded.
    static let clearlyAPicture = 2500.0
    /// Packets read after a seek before giving up on reaching the target (a long GOP).
    static let packetsPerCandidate = 1500

    package static func thumbnail(path: String, demuxer: Demuxer, timeout: Double = 10) throws -> Result {
        let input = try MediaInput(path: path, demuxer: demuxer, limits: MediaInputLimits(timeout: timeout))
        guard let stream = input.streams.first(where: { $0.codecType == "video" && ($0.width ?? 0) > 0 }) else {
            throw StillThumbnailer.Failure(description: "no video stream")
        }
        let decoder = try MediaDecoder(input: input, stream: stream.index, strict: false, threads: 1)
        let timeBase = input.timeBase(ofStream: stream.index) ?? (1, 1)
        let duration = input.duration ?? stream.duration
        let targets = (duration ?? 0) > 0.5 ? positions.map { $0 * (duration ?? 0) } : [0]
        var best: (thumbnail: Thumbnail, variance: Double, time: Double)?
        let packet = try MediaPacket()
        let frame = try MediaFrame()
        for target in targets {
            if target > 0 {
                guard input.seek(stream: stream.index, seconds: target, timeBase: timeBase) else { break }
                decoder.flush()
            }
            guard
                let time = try decodeFrame(
                    at: target, input: input, decoder: decoder, stream: stream.index, timeBase: timeBase,
                    packet: packet, frame: frame)
            else { continue }
            let picture = try FrameRGBScaler.thumbnail(of: frame)
            let variance = picture.lumaVariance
            if variance > best?.variance ?? -1 { best = (picture, variance, time) }
            if variance >= clearlyAPicture { break }
        }
        guard let best else { throw StillThumbnailer.Failure(description: "no frame could be decoded") }
        let upright = best.thumbnail.oriented(Thumbnail.orientation(forRotation: stream.rotation ?? 0))
        return Result(thumbnail: upright, duration: duration, time: best.time)
    }

    /// Decodes into `frame` the first frame at or after `target` seconds; returns its time, nil when the stream
    /// ended first.
    private static func decodeFrame(
        at target: Double, input: MediaInput, decoder: MediaDecoder, stream: Int, timeBase: (num: Int32, den: Int32),
        packet: MediaPacket, frame: MediaFrame
    ) throws -> Double? {
        var packets = 0
        func seconds(_ frame: MediaFrame) -> Double {
            guard let pts = frame.bestEffortTimestamp, timeBase.den > 0 else { return target }
            return Double(pts) * Double(timeBase.num) / Double(timeBase.den)
        }
        while packets < packetsPerCandidate {
            let more = try input.readPacket(into: packet)
            if more && packet.streamIndex != stream { continue }
            packets += 1
            _ = try? decoder.send(more ? packet : nil)
            while try decoder.receive(frame) == .ready {
                let time = seconds(frame)
                // A frame within half a frame's time of the target is the target's frame.
                if time >= target - 0.02 { return time }
                if packets >= packetsPerCandidate { return time }
            }
            if !more { break }
        }
        return nil
    }
}

extension MediaInput {
    /// Seeks to the keyframe at or before `seconds` on stream `stream` (`av_seek_frame`, backward); false when
    /// the container cannot seek.
    func seek(stream: Int, seconds: Double, timeBase: (num: Int32, den: Int32)) -> Bool {
        guard timeBase.num > 0, timeBase.den > 0, seconds.isFinite, seconds >= 0 else { return false }
        let units = seconds * Double(timeBase.den) / Double(timeBase.num)
        guard units < Double(Int64.max / 2) else { return false }
        return av_seek_frame(context, Int32(stream), Int64(units), AVSEEK_FLAG_BACKWARD) >= 0
    }
}

extension MediaDecoder {
    /// Drops the frames buffered before a seek (`avcodec_flush_buffers`).
    func flush() { avcodec_flush_buffers(context) }
}

/// One swscale context (`sws_getContext`) from a decoded frame's pixel format and size to packed RGB at thumbnail
/// size (area averaging), with the frame's own matrix and range; `deinit` calls `sws_freeContext`.
final class FrameRGBScaler {
    private let context: OpaquePointer
    let width: Int
    let height: Int

    /// `side`: the long side of the pictures it makes (the contact sheet's `Thumbnail.maxSide` unless told).
    init(frame: MediaFrame, within side: Int = Thumbnail.maxSide) throws {
        let source = frame.pointer.pointee
        // Non-square pixels (anamorphic DV) are shown at their display aspect.
        let aspect = source.sample_aspect_ratio
        let displayWidth =
            aspect.num > 0 && aspect.den > 0
            ? Int(Double(source.width) * Double(aspect.num) / Double(aspect.den))
            : Int(source.width)
        (width, height) = Thumbnail.fitting(width: max(1, displayWidth), height: Int(source.height), within: side)
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

    /// The frame scaled to packed RGB rows.
    func scale(_ frame: MediaFrame) throws -> Thumbnail {
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
        return Thumbnail(width: width, height: height, stride: stride, rows: rows)
    }

    /// `frame` at thumbnail size, with a scaler made for it.
    static func thumbnail(of frame: MediaFrame) throws -> Thumbnail { try FrameRGBScaler(frame: frame).scale(frame) }
}
