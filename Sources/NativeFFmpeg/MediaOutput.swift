internal import CFFmpeg
internal import CFFmpegShims

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Output containers the transcoders write.
package enum OutputContainer: String, Sendable {
    case mp4
    case mov
    /// MP4 with the `M4A ` brand (FFmpeg's `ipod` muxer), what iPhones record audio into.
    case m4a

    var muxerName: String {
        switch self {
        case .mp4: "mp4"
        case .mov: "mov"
        case .m4a: "ipod"
        }
    }
}

/// An `AVFormatContext` for writing (`avformat_alloc_output_context2`) with its `AVIOContext` on a file we made
/// (`avio_open2`, `file` protocol only). `finish()` writes the trailer; with `faststart` the mov muxer then moves
/// the moov atom in front of the media data. `deinit` closes the I/O context and frees the format context.
package final class MediaOutput {
    let context: UnsafeMutablePointer<AVFormatContext>
    private var headerWritten = false
    /// Each output stream's time base once the header is written (the muxer may change what we asked for).
    private var timeBases: [AVRational] = []

    package init(path: String, container: OutputContainer) throws {
        let url = "file:" + path
        var allocated: UnsafeMutablePointer<AVFormatContext>? = nil
        try ffmpegCall("avformat_alloc_output_context2") {
            avformat_alloc_output_context2(&allocated, nil, container.muxerName, url)
        }
        guard let context = allocated else {
            throw FFmpegError(call: "avformat_alloc_output_context2", code: .outOfMemory)
        }
        var options: OpaquePointer? = nil
        defer { av_dict_free(&options) }
        av_dict_set(&options, "protocol_whitelist", "file", 0)
        let (result, lines) = FFmpegLog.capturingErrors {
            avio_open2(&context.pointee.pb, url, AVIO_FLAG_WRITE, nil, &options)
        }
        if result < 0 {
            avformat_free_context(context)
            var error = FFmpegError(call: "avio_open2", code: FFmpegErrorCode(rawValue: result))
            if !lines.isEmpty { error.message = lines.joined(separator: "; ") + " (\(error.message))" }
            throw error
        }
        // The faststart pass reopens the file by its URL to move the data: only the file protocol may serve it.
        context.pointee.protocol_whitelist = av_strdup("file")
        self.context = context
    }

    deinit {
        if context.pointee.pb != nil { avio_closep(&context.pointee.pb) }
        avformat_free_context(context)
    }

    /// Whether the muxer wants codec headers in extradata (`AVFMT_GLOBALHEADER`; true for mp4/mov).
    package var wantsGlobalHeader: Bool {
        guard let format = context.pointee.oformat else { return false }
        return format.pointee.flags & AVFMT_GLOBALHEADER != 0
    }

    private func newStream() throws -> UnsafeMutablePointer<AVStream> {
        guard let stream = avformat_new_stream(context, nil) else {
            throw FFmpegError(call: "avformat_new_stream", code: .outOfMemory)
        }
        return stream
    }

    /// Adds a stream that carries `input`'s stream `index` unchanged (remux): codec parameters, time base,
    /// language, and the display matrix (rotation). Returns the output stream index.
    package func addStream(copying index: Int, of input: MediaInput) throws -> Int {
        try input.withStream(index) { source in
            guard let source, let parameters = source.pointee.codecpar else {
                throw FFmpegError(call: "avformat_new_stream", code: FFmpegErrorCode(posix: EINVAL))
            }
            let stream = try newStream()
            try ffmpegCall("avcodec_parameters_copy") { avcodec_parameters_copy(stream.pointee.codecpar, parameters) }
            // The tag is the input container's; let the muxer choose its own (e.g. none for mov → mp4 differences).
            stream.pointee.codecpar.pointee.codec_tag = 0
            stream.pointee.time_base = source.pointee.time_base
            try copyStreamExtras(from: source, to: stream)
            return Int(stream.pointee.index)
        }
    }

    /// Adds a stream for `encoder`'s packets (codec parameters from the opened encoder); `like` names the input
    /// stream whose language and display matrix it inherits.
    package func addStream(encoder: MediaEncoder, like index: Int?, of input: MediaInput) throws -> Int {
        let stream = try newStream()
        try ffmpegCall("avcodec_parameters_from_context") {
            avcodec_parameters_from_context(stream.pointee.codecpar, encoder.context)
        }
        stream.pointee.time_base = encoder.context.pointee.time_base
        if encoder.context.pointee.codec_type == AVMEDIA_TYPE_VIDEO {
            stream.pointee.avg_frame_rate = encoder.context.pointee.framerate
        }
        if let index {
            try input.withStream(index) { source in
                if let source { try copyStreamExtras(from: source, to: stream) }
            }
        }
        return Int(stream.pointee.index)
    }

    /// Language and handler metadata, and the display matrix, which the mov muxer writes into the track header.
    private func copyStreamExtras(
        from source: UnsafeMutablePointer<AVStream>, to stream: UnsafeMutablePointer<AVStream>
    ) throws {
        for key in ["language", "creation_time", "handler_name"] {
            if let entry = av_dict_get(source.pointee.metadata, key, nil, 0), let value = entry.pointee.value {
                av_dict_set(&stream.pointee.metadata, key, value, 0)
            }
        }
        var size = 0
        if let matrix = av_stream_get_side_data(source, AV_PKT_DATA_DISPLAYMATRIX, &size), size >= 36 {
            guard let copy = av_stream_new_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, size) else {
                throw FFmpegError(call: "av_stream_new_side_data", code: .outOfMemory)
            }
            copy.update(from: matrix, count: size)
        }
    }

    /// Writes the header (`avformat_write_header`) with container `metadata` (creation_time, location …) and, with
    /// `faststart`, `movflags=+faststart`.
    package func writeHeader(metadata: [String: String], faststart: Bool) throws {
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            av_dict_set(&context.pointee.metadata, key, value, 0)
        }
        var options: OpaquePointer? = nil
        defer { av_dict_free(&options) }
        if faststart { av_dict_set(&options, "movflags", "+faststart", 0) }
        try captured("avformat_write_header") { avformat_write_header(context, &options) }
        headerWritten = true
        timeBases = (0..<Int(context.pointee.nb_streams)).map {
            context.pointee.streams[$0]?.pointee.time_base ?? AVRational(num: 1, den: 1)
        }
    }

    /// Writes `packet` (timestamps in `timeBase`) to output stream `index` (`av_interleaved_write_frame`, which
    /// takes the payload and leaves `packet` empty).
    package func write(_ packet: MediaPacket, timeBase: (num: Int32, den: Int32), stream index: Int) throws {
        guard headerWritten, index < timeBases.count else {
            throw FFmpegError(call: "av_interleaved_write_frame", code: FFmpegErrorCode(posix: EINVAL))
        }
        let pointer = packet.pointer
        pointer.pointee.stream_index = Int32(index)
        av_packet_rescale_ts(pointer, AVRational(num: timeBase.num, den: timeBase.den), timeBases[index])
        pointer.pointee.pos = -1
        try captured("av_interleaved_write_frame") { av_interleaved_write_frame(context, pointer) }
    }

    /// Writes the trailer (`av_write_trailer`; the faststart rewrite happens here) and closes the file.
    package func finish() throws {
        try captured("av_write_trailer") { av_write_trailer(context) }
        let result = avio_closep(&context.pointee.pb)
        if result < 0 { throw FFmpegError(call: "avio_closep", code: FFmpegErrorCode(rawValue: result)) }
    }

    /// Runs a muxer call with its error log captured into the thrown error (the muxer says why, the code does not).
    private func captured(_ call: String, _ body: () -> Int32) throws {
        let (result, lines) = FFmpegLog.capturingErrors(body)
        guard result < 0 else { return }
        var error = FFmpegError(call: call, code: FFmpegErrorCode(rawValue: result))
        if !lines.isEmpty { error.message = lines.joined(separator: "; ") + " (\(error.message))" }
        throw error
    }
}
