internal import CFFmpeg

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What a receive call found. `AVERROR(EAGAIN)` and `AVERROR_EOF` are states of the send/receive dance, not
/// failures, so they are cases here rather than thrown errors.
package enum CodecStatus: Sendable, Equatable {
    /// A frame or packet was produced.
    case ready
    /// `AVERROR(EAGAIN)`: nothing until more input is sent.
    case needsInput
    /// `AVERROR_EOF`: fully drained after a flush.
    case endOfStream
}

/// Turns the result of `avcodec_receive_*` into a `CodecStatus`, throwing for real errors.
private func receiveStatus(_ call: String, _ result: Int32) throws -> CodecStatus {
    if result >= 0 { return .ready }
    if result == FFmpegErrorCode.tryAgain.rawValue { return .needsInput }
    if result == FFmpegErrorCode.endOfFile.rawValue { return .endOfStream }
    throw FFmpegError(call: call, code: FFmpegErrorCode(rawValue: result))
}

/// Turns the result of `avcodec_send_*` into accepted (true) or full (false: receive first, then send again).
/// `AVERROR_EOF` after a flush means the flush was already sent: accepted.
private func sendStatus(_ call: String, _ result: Int32) throws -> Bool {
    if result >= 0 || result == FFmpegErrorCode.endOfFile.rawValue { return true }
    if result == FFmpegErrorCode.tryAgain.rawValue { return false }
    throw FFmpegError(call: call, code: FFmpegErrorCode(rawValue: result))
}

/// A decoder (`AVCodecContext` from `avcodec_alloc_context3` + `avcodec_open2`) for one input stream;
/// `deinit` calls `avcodec_free_context`.
package final class MediaDecoder {
    let context: UnsafeMutablePointer<AVCodecContext>
    /// FFmpeg's name of the codec (`h264`, `aac`).
    package let codecName: String
    /// Where the decoder's worker threads' error lines go (see `CodecLog`).
    private let workerLog: CodecLog

    /// Opens the decoder for stream `index` of `input`. `strict` sets `err_recognition=explode`, so damage the
    /// decoder would otherwise conceal (a broken macroblock) is reported as an error. Throws `FFmpegError`, with
    /// `.decoderNotFound` and the codec's name when this FFmpeg has no decoder for it.
    package init(input: MediaInput, stream index: Int, strict: Bool, threads: Int = 0) throws {
        let log = CodecLog()
        let found: (UnsafeMutablePointer<AVCodecContext>, String) = try input.withStream(index) { stream in
            guard let stream, let parameters = stream.pointee.codecpar else {
                throw FFmpegError(
                    call: "avcodec_find_decoder", code: FFmpegErrorCode(posix: EINVAL),
                    message: "the input has no stream \(index)")
            }
            let id = parameters.pointee.codec_id
            let name = avcodec_get_name(id).map { String(cString: $0) } ?? "unknown"
            guard id != AV_CODEC_ID_NONE, let codec = avcodec_find_decoder(id) else {
                let tag = input.codecTag(ofStream: index).map { " (codec tag '\($0)')" } ?? ""
                throw FFmpegError(
                    call: "avcodec_find_decoder", code: .decoderNotFound,
                    message: "this FFmpeg has no decoder for codec '\(name)'\(tag)")
            }
            guard let context = avcodec_alloc_context3(codec) else {
                throw FFmpegError(call: "avcodec_alloc_context3", code: .outOfMemory)
            }
            var local: UnsafeMutablePointer<AVCodecContext>? = context
            do {
                try ffmpegCall("avcodec_parameters_to_context") { avcodec_parameters_to_context(context, parameters) }
                context.pointee.pkt_timebase = stream.pointee.time_base
                context.pointee.thread_count = Int32(threads)
                if strict { context.pointee.err_recognition |= AV_EF_EXPLODE }
                // Before the open, which starts the worker threads with a copy of the context.
                context.pointee.opaque = log.register()
                try ffmpegCall("avcodec_open2") { avcodec_open2(context, codec, nil) }
            } catch {
                avcodec_free_context(&local)
                log.unregister()
                throw error
            }
            return (context, name)
        }
        context = found.0
        codecName = found.1
        workerLog = log
    }

    deinit {
        var local: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&local)
        // Only now: the workers that could log through it are joined.
        workerLog.unregister()
    }

    /// Error lines the decoder's worker threads logged since the last call.
    package func takeWorkerLog() -> [String] { workerLog.take() }

    /// Sends one packet, or nil to start draining (`avcodec_send_packet`). False means the decoder is full:
    /// receive its frames, then send the same packet again.
    package func send(_ packet: MediaPacket?) throws -> Bool {
        try sendStatus("avcodec_send_packet", avcodec_send_packet(context, packet?.pointer))
    }

    /// Receives the next decoded frame into `frame` (`avcodec_receive_frame`).
    package func receive(_ frame: MediaFrame) throws -> CodecStatus {
        frame.unref()
        return try receiveStatus("avcodec_receive_frame", avcodec_receive_frame(context, frame.pointer))
    }
}

/// Settings of an H.264 encode (libx264 through libavcodec).
package struct VideoEncoderSettings: Sendable {
    package var width: Int
    package var height: Int
    /// Constant rate factor; used when `bitRate` is nil.
    package var crf: Int
    /// Average bit rate in bits per second; overrides `crf`.
    package var bitRate: Int?
    package var preset: String
    /// Frames per second the encoder assumes for rate control (the output rate after any `max_fps`).
    package var frameRate: (num: Int32, den: Int32)
    /// Extra `x264-params` (`rc-lookahead=10`), applied last.
    package var x264Params: String?
    /// libx264 threads; 0 = one per core, as x264 chooses.
    package var threads: Int
    /// One pass of a two-pass encode at `bitRate`; nil for a single pass.
    package var pass: RateControlPass?

    package init(
        width: Int, height: Int, crf: Int, bitRate: Int?, preset: String, frameRate: (num: Int32, den: Int32),
        x264Params: String? = nil, threads: Int = 0, pass: RateControlPass? = nil
    ) {
        self.width = width
        self.height = height
        self.crf = crf
        self.bitRate = bitRate
        self.preset = preset
        self.frameRate = frameRate
        self.x264Params = x264Params
        self.threads = threads
        self.pass = pass
    }
}

/// Settings of an AAC encode (libavcodec's native `aac` encoder).
package struct AudioEncoderSettings: Sendable, Equatable {
    package var bitRate: Int
    package var channels: Int
    package var sampleRate: Int

    package init(bitRate: Int, channels: Int, sampleRate: Int) {
        self.bitRate = bitRate
        self.channels = channels
        self.sampleRate = sampleRate
    }
}

/// An encoder (`AVCodecContext` opened with `avcodec_open2`); `deinit` calls `avcodec_free_context`.
package final class MediaEncoder {
    /// `AV_PIX_FMT_YUV420P`'s value, for `MediaFrame.isYUV420P`.
    static let yuv420p = AV_PIX_FMT_YUV420P.rawValue
    let context: UnsafeMutablePointer<AVCodecContext>
    package let codecName: String

    /// An H.264 encoder for yuv420p frames of `settings.width`×`height`, timestamps in `timeBase`; colour
    /// description and sample aspect ratio copied from `decoder`. `globalHeader`: the muxer wants SPS/PPS in
    /// extradata (mp4/mov do).
    package init(
        h264 settings: VideoEncoderSettings, timeBase: (num: Int32, den: Int32), matching decoder: MediaDecoder,
        globalHeader: Bool
    ) throws {
        context = try Self.makeContext(encoder: "libx264") { context, codec in
            let source = decoder.context.pointee
            context.pointee.width = Int32(settings.width)
            context.pointee.height = Int32(settings.height)
            context.pointee.pix_fmt = AV_PIX_FMT_YUV420P
            context.pointee.time_base = AVRational(num: timeBase.num, den: timeBase.den)
            context.pointee.framerate = AVRational(num: settings.frameRate.num, den: settings.frameRate.den)
            context.pointee.sample_aspect_ratio = source.sample_aspect_ratio
            context.pointee.color_range = source.color_range == AVCOL_RANGE_JPEG ? AVCOL_RANGE_MPEG : source.color_range
            context.pointee.color_primaries = source.color_primaries
            context.pointee.color_trc = source.color_trc
            context.pointee.colorspace = source.colorspace
            context.pointee.thread_count = Int32(settings.threads)
            if globalHeader { context.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER }
            var options: OpaquePointer? = nil
            defer { av_dict_free(&options) }
            av_dict_set(&options, "preset", settings.preset, 0)
            if let bitRate = settings.bitRate {
                context.pointee.bit_rate = Int64(bitRate)
            } else {
                av_dict_set(&options, "crf", String(settings.crf), 0)
            }
            if let params = settings.x264Params, !params.isEmpty { av_dict_set(&options, "x264-params", params, 0) }
            settings.pass?.apply(to: context, options: &options)
            try ffmpegCall("avcodec_open2(libx264)") { avcodec_open2(context, codec, &options) }
            // An option libx264 did not take (a misspelt preset is caught by x264 itself) stays in the dictionary.
            if let left = av_dict_get(options, "", nil, AV_DICT_IGNORE_SUFFIX), let key = left.pointee.key {
                throw FFmpegError(
                    call: "avcodec_open2(libx264)", code: FFmpegErrorCode(posix: EINVAL),
                    message: "libx264 does not take option '\(String(cString: key))'")
            }
        }
        codecName = "h264"
    }

    /// An AAC encoder (float planar input, `frameSize` samples per frame except the last) at `settings`.
    package init(aac settings: AudioEncoderSettings, globalHeader: Bool) throws {
        context = try Self.makeContext(encoder: "aac") { context, codec in
            context.pointee.sample_fmt = AV_SAMPLE_FMT_FLTP
            context.pointee.sample_rate = Int32(settings.sampleRate)
            context.pointee.time_base = AVRational(num: 1, den: Int32(settings.sampleRate))
            context.pointee.bit_rate = Int64(settings.bitRate)
            av_channel_layout_default(&context.pointee.ch_layout, Int32(settings.channels))
            if globalHeader { context.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER }
            try ffmpegCall("avcodec_open2(aac)") { avcodec_open2(context, codec, nil) }
        }
        codecName = "aac"
    }

    /// Finds the encoder `name` (`avcodec_find_encoder_by_name`), allocates its context and hands both to
    /// `configure`, which sets it up and opens it; the context is freed if `configure` throws.
    private static func makeContext(
        encoder name: String, _ configure: (UnsafeMutablePointer<AVCodecContext>, UnsafePointer<AVCodec>) throws -> Void
    ) throws -> UnsafeMutablePointer<AVCodecContext> {
        guard let codec = avcodec_find_encoder_by_name(name) else {
            throw FFmpegError(
                call: "avcodec_find_encoder_by_name", code: FFmpegErrorCode(posix: ENOSYS),
                message: "this FFmpeg has no \(name) encoder")
        }
        guard let context = avcodec_alloc_context3(codec) else {
            throw FFmpegError(call: "avcodec_alloc_context3", code: .outOfMemory)
        }
        do {
            try configure(context, codec)
        } catch {
            var local: UnsafeMutablePointer<AVCodecContext>? = context
            avcodec_free_context(&local)
            throw error
        }
        return context
    }

    deinit {
        var local: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&local)
    }

    /// Samples per frame the encoder wants (1024 for AAC); 0 for video.
    package var frameSize: Int { Int(context.pointee.frame_size) }
    package var timeBase: (num: Int32, den: Int32) { (context.pointee.time_base.num, context.pointee.time_base.den) }

    /// Sends one frame, or nil to flush (`avcodec_send_frame`). False: receive packets first, then send again.
    package func send(_ frame: MediaFrame?) throws -> Bool {
        try sendStatus("avcodec_send_frame", avcodec_send_frame(context, frame?.pointer))
    }

    /// Receives the next encoded packet (`avcodec_receive_packet`).
    package func receive(_ packet: MediaPacket) throws -> CodecStatus {
        packet.unref()
        return try receiveStatus("avcodec_receive_packet", avcodec_receive_packet(context, packet.pointer))
    }
}

extension MediaEncoder {
    /// The picture size a video encoder was opened with.
    package var width: Int32 { context.pointee.width }
    package var height: Int32 { context.pointee.height }
}
