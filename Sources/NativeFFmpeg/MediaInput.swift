internal import CFFmpeg
internal import CFFmpegShims

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An FFmpeg demuxer name from the allow-list. Input is never probed by FFmpeg's guesswork: the caller sniffs the
/// magic bytes and names the one demuxer that fits, so a playlist, concat list or image sequence renamed `.mov`
/// never reaches a demuxer that opens other files or sockets.
package struct Demuxer: Hashable, Sendable, CustomStringConvertible {
    /// The name `av_find_input_format` takes.
    package let name: String

    private init(unchecked name: String) { self.name = name }

    package static let mov = Demuxer(unchecked: "mov")
    package static let matroska = Demuxer(unchecked: "matroska")
    package static let wav = Demuxer(unchecked: "wav")
    package static let mp3 = Demuxer(unchecked: "mp3")
    package static let aac = Demuxer(unchecked: "aac")
    package static let flac = Demuxer(unchecked: "flac")
    package static let ogg = Demuxer(unchecked: "ogg")
    package static let jpegPipe = Demuxer(unchecked: "jpeg_pipe")
    package static let pngPipe = Demuxer(unchecked: "png_pipe")
    package static let gifPipe = Demuxer(unchecked: "gif")
    package static let webpPipe = Demuxer(unchecked: "webp_pipe")

    /// Every demuxer the probe may use: single-file formats that open nothing but their own input.
    package static let allowed: [Demuxer] = [
        .mov, .matroska, .wav, .mp3, .aac, .flac, .ogg, .jpegPipe, .pngPipe, .gifPipe, .webpPipe,
    ]

    /// An allowed demuxer by name (`mov`, `mp4`, `m4a`, `webm` map to their FFmpeg demuxer); nil for anything
    /// else, including `hls`, `concat` and `image2`.
    package init?(name: String) {
        switch name.lowercased() {
        case "mov", "mp4", "m4a", "3gp", "quicktime": self = .mov
        case "matroska", "webm", "mkv": self = .matroska
        case let other:
            guard let found = Demuxer.allowed.first(where: { $0.name == other }) else { return nil }
            self = found
        }
    }

    /// Any demuxer FFmpeg has, bypassing the allow-list. Only for tests that prove the probe guard holds even
    /// when a dangerous demuxer (hls, concat) is forced.
    package static func unrestricted(_ name: String) -> Demuxer { Demuxer(unchecked: name) }

    package var description: String { name }
}

/// Bounds of one open: how long, how many bytes and how much media FFmpeg may look at.
package struct MediaInputLimits: Sendable {
    /// Wall-clock limit for the whole open (interrupt callback → the open fails as timed out); 0 = none.
    package var timeout: Double
    /// Bytes FFmpeg may read to detect streams (`probesize`).
    package var probeSize: Int
    /// Media time `avformat_find_stream_info` may analyse, in seconds (`analyzeduration`).
    package var analyzeDuration: Double
    /// Whether to run `avformat_find_stream_info`, which decodes a few frames.
    package var streamInfo: StreamInfoMode

    package enum StreamInfoMode: Sendable {
        /// Always read stream info (what ffprobe does).
        case always
        /// Only when the header left a stream without codec, dimensions or sample rate: the mov header already
        /// carries them, and skipping the decode is most of the probe's speed.
        case whenIncomplete
    }

    package init(
        timeout: Double = 10, probeSize: Int = 1 << 20, analyzeDuration: Double = 1,
        streamInfo: StreamInfoMode = .whenIncomplete
    ) {
        self.timeout = timeout
        self.probeSize = probeSize
        self.analyzeDuration = analyzeDuration
        self.streamInfo = streamInfo
    }
}

/// Why an open failed: the FFmpeg call and its text, the demuxer's own log lines, and what the guard saw.
package struct MediaInputError: Error, Sendable, CustomStringConvertible {
    package var error: FFmpegError
    /// FFmpeg's error-level log lines during the call ("moov atom not found").
    package var log: [String]
    /// True when the deadline interrupted FFmpeg.
    package var timedOut: Bool
    /// Opens the guard refused (other files, URLs) before the failure.
    package var refusedOpens: Int

    /// The demuxer's reason first, then the call and FFmpeg's text for the code.
    package var description: String {
        log.isEmpty ? error.description : "\(log.joined(separator: "; ")) (\(error.description))"
    }
}

/// One stream as plain Swift values (ffprobe's fields).
package struct MediaStreamInfo: Sendable, Equatable {
    package var index: Int
    /// `video`, `audio`, `subtitle`, `data`, `attachment` or `unknown`.
    package var codecType: String
    /// `h264`, `aac` … (FFmpeg's codec descriptor name, as ffprobe prints it); nil when FFmpeg has none.
    package var codecName: String?
    package var profile: String?
    package var width: Int?
    package var height: Int?
    /// Average frame rate in frames per second.
    package var averageFrameRate: Double?
    /// Display-matrix rotation in degrees (counter-clockwise, as ffprobe prints it).
    package var rotation: Double?
    package var sampleRate: Int?
    package var channels: Int?
    package var channelLayout: String?
    package var language: String?
    /// Seconds.
    package var duration: Double?
    package var bitRate: Int64?
    package var metadata: [String: String]
}

/// An `AVFormatContext` opened for reading one local file with one allowed demuxer (`avformat_open_input`),
/// its streams read (`avformat_find_stream_info` when needed); `deinit` closes it (`avformat_close_input`).
///
/// Safety net on every open: the URL is `file:` + the path (a name like `pipe:1.mov` cannot select another
/// protocol), `protocol_whitelist=file`, and the probe guard from CIngestShims, whose `io_open` allows exactly
/// one open — the file itself — and whose interrupt callback enforces the deadline. Not thread-safe: one thread
/// at a time.
package final class MediaInput {
    /// Internal so the packet-reading extension (MediaInput+Packets.swift) can lend it to FFmpeg; never escapes.
    let context: UnsafeMutablePointer<AVFormatContext>
    /// Owned here and freed after the context: the context's callbacks point at it.
    let guardState: UnsafeMutablePointer<IngestProbeGuard>

    package let demuxer: Demuxer
    /// FFmpeg's demuxer name (`mov,mp4,m4a,3gp,3g2,mj2`).
    package let formatName: String
    /// Container duration in seconds, nil when the container does not say.
    package let duration: Double?
    /// Container bit rate in bits per second, nil when unknown.
    package let bitRate: Int64?
    package let metadata: [String: String]
    package let streams: [MediaStreamInfo]
    /// Whether `avformat_find_stream_info` ran.
    package let readStreamInfo: Bool
    /// Opens the guard refused (see `Demuxer.unrestricted`).
    package var refusedOpens: Int { Int(guardState.pointee.nested_open_attempts) }

    /// The in-memory input the context reads through instead of the file, if any; outlives the context.
    private let memory: MemoryIO?

    /// Opens `path` with `demuxer` within `limits` (or reads `memory` instead, `path` then only naming it).
    /// Throws `MediaInputError`.
    package init(
        path: String, demuxer: Demuxer, limits: MediaInputLimits = MediaInputLimits(), memory: MemoryIO? = nil
    ) throws {
        let guardState = UnsafeMutablePointer<IngestProbeGuard>.allocate(capacity: 1)
        guardState.initialize(to: IngestProbeGuard())
        var opened: UnsafeMutablePointer<AVFormatContext>? = nil
        do {
            opened = try Self.open(
                path: path, demuxer: demuxer, limits: limits, guardState: guardState, memory: memory)
        } catch {
            guardState.deallocate()
            throw error
        }
        guard let context = opened else {
            guardState.deallocate()
            throw MediaInputError(
                error: FFmpegError(call: "avformat_open_input", code: .outOfMemory), log: [], timedOut: false,
                refusedOpens: 0)
        }
        self.context = context
        self.guardState = guardState
        self.demuxer = demuxer
        self.memory = memory

        var ran = false
        do {
            if limits.streamInfo == .always || !Self.headerIsComplete(context) {
                ran = true
                try Self.guarded("avformat_find_stream_info", guardState) {
                    avformat_find_stream_info(context, nil)
                }
            }
        } catch {
            var local: UnsafeMutablePointer<AVFormatContext>? = context
            avformat_close_input(&local)
            guardState.deallocate()
            throw error
        }
        readStreamInfo = ran

        let fileSize = context.pointee.pb.map { avio_size($0) } ?? -1
        formatName = context.pointee.iformat.map { String(cString: $0.pointee.name) } ?? demuxer.name
        let rawDuration = context.pointee.duration
        let containerDuration = rawDuration > 0 && rawDuration != Int64.min ? Double(rawDuration) / 1_000_000 : nil
        duration = containerDuration
        bitRate = Self.bitRate(declared: context.pointee.bit_rate, fileSize: fileSize, duration: containerDuration)
        metadata = Self.dictionary(context.pointee.metadata)
        var streams: [MediaStreamInfo] = []
        for index in 0..<Int(context.pointee.nb_streams) {
            guard let stream = context.pointee.streams[index] else { continue }
            streams.append(Self.describe(stream, index: index, headerOnly: !ran))
        }
        self.streams = streams
    }

    /// The container's bit rate, or when it declares none what avformat_find_stream_info's timing estimate would
    /// set (and ffprobe prints): the file's bits over its duration.
    private static func bitRate(declared: Int64, fileSize: Int64, duration: Double?) -> Int64? {
        if declared > 0 { return declared }
        guard let duration, duration > 0, fileSize > 0 else { return nil }
        let estimate = Double(fileSize) * 8 / duration
        return estimate < Double(Int64.max) ? Int64(estimate) : nil
    }

    deinit {
        var local: UnsafeMutablePointer<AVFormatContext>? = context
        avformat_close_input(&local)
        guardState.deallocate()
    }

    private static func open(
        path: String, demuxer: Demuxer, limits: MediaInputLimits, guardState: UnsafeMutablePointer<IngestProbeGuard>,
        memory: MemoryIO?
    ) throws -> UnsafeMutablePointer<AVFormatContext>? {
        guard let format = av_find_input_format(demuxer.name) else {
            throw MediaInputError(
                error: FFmpegError(
                    call: "av_find_input_format", code: FFmpegErrorCode(posix: EINVAL),
                    message: "this FFmpeg has no demuxer named \(demuxer.name)"),
                log: [], timedOut: false, refusedOpens: 0)
        }
        guard let context = avformat_alloc_context() else {
            throw MediaInputError(
                error: FFmpegError(call: "avformat_alloc_context", code: .outOfMemory), log: [], timedOut: false,
                refusedOpens: 0)
        }
        ingest_av_install_guard(context, guardState)
        // A custom pb: avformat_open_input reads it and opens nothing (and does not free it).
        if let memory { context.pointee.pb = memory.context }
        var options: OpaquePointer? = nil
        defer { av_dict_free(&options) }
        av_dict_set(&options, "protocol_whitelist", "file", 0)
        av_dict_set(&options, "format_whitelist", demuxer.name, 0)
        av_dict_set(&options, "probesize", String(max(limits.probeSize, 32)), 0)
        av_dict_set(&options, "analyzeduration", String(Int64(max(limits.analyzeDuration, 0) * 1_000_000)), 0)
        // Frame-rate probing decodes frames; the container's own timing is what we report.
        av_dict_set(&options, "fpsprobesize", "0", 0)
        ingest_av_guard_start(guardState, Int64(max(limits.timeout, 0) * 1_000_000))
        let url = "file:" + path
        var maybeContext: UnsafeMutablePointer<AVFormatContext>? = context
        // On failure avformat_open_input frees the context and sets it to NULL.
        try guarded("avformat_open_input", guardState) {
            avformat_open_input(&maybeContext, url, format, &options)
        }
        return maybeContext
    }

    /// Runs one FFmpeg call with its error log captured; turns a negative result into `MediaInputError`.
    private static func guarded(
        _ call: String, _ guardState: UnsafeMutablePointer<IngestProbeGuard>, _ body: () -> Int32
    ) throws {
        let (result, lines) = FFmpegLog.capturingErrors(body)
        guard result < 0 else { return }
        let timedOut = guardState.pointee.timed_out != 0
        var error = FFmpegError(call: call, code: FFmpegErrorCode(rawValue: result))
        if timedOut { error.message = "timed out (\(error.message))" }
        throw MediaInputError(
            error: error, log: lines, timedOut: timedOut, refusedOpens: Int(guardState.pointee.nested_open_attempts))
    }

    /// True when every stream already has what the report needs from the header alone.
    private static func headerIsComplete(_ context: UnsafeMutablePointer<AVFormatContext>) -> Bool {
        guard context.pointee.nb_streams > 0 else { return false }
        for index in 0..<Int(context.pointee.nb_streams) {
            guard let stream = context.pointee.streams[index], let parameters = stream.pointee.codecpar else {
                return false
            }
            let codec = parameters.pointee
            if codec.codec_id == AV_CODEC_ID_NONE { return false }
            switch codec.codec_type {
            case AVMEDIA_TYPE_VIDEO:
                if codec.width <= 0 || codec.height <= 0 { return false }
            case AVMEDIA_TYPE_AUDIO:
                if codec.sample_rate <= 0 || ingest_av_channels(parameters) <= 0 { return false }
            default: break
            }
        }
        return true
    }

    /// `headerOnly`: stream info was not read, so fill in what FFmpeg's decoders would have (the default channel
    /// layout) to report what ffprobe reports.
    private static func describe(
        _ stream: UnsafeMutablePointer<AVStream>, index: Int, headerOnly: Bool
    ) -> MediaStreamInfo {
        let metadata = dictionary(stream.pointee.metadata)
        var info = MediaStreamInfo(index: index, codecType: "unknown", metadata: metadata)
        info.language = metadata["language"].flatMap { $0 == "und" ? nil : $0 }
        let timeBase = stream.pointee.time_base
        if stream.pointee.duration > 0, stream.pointee.duration != Int64.min, timeBase.den > 0 {
            info.duration = Double(stream.pointee.duration) * Double(timeBase.num) / Double(timeBase.den)
        }
        guard let parameters = stream.pointee.codecpar else { return info }
        let codec = parameters.pointee
        if let type = av_get_media_type_string(codec.codec_type) { info.codecType = String(cString: type) }
        if codec.codec_id != AV_CODEC_ID_NONE, let descriptor = avcodec_descriptor_get(codec.codec_id) {
            info.codecName = String(cString: descriptor.pointee.name)
        }
        info.profile = profileName(codec, codecName: info.codecName)
        if codec.bit_rate > 0 { info.bitRate = codec.bit_rate }
        switch codec.codec_type {
        case AVMEDIA_TYPE_VIDEO:
            if codec.width > 0, codec.height > 0 {
                info.width = Int(codec.width)
                info.height = Int(codec.height)
            }
            let rate = stream.pointee.avg_frame_rate
            if rate.num > 0, rate.den > 0 { info.averageFrameRate = Double(rate.num) / Double(rate.den) }
            var present: Int32 = 0
            let rotation = ingest_av_stream_rotation(stream, &present)
            // av_display_rotation_get gives -0.0 for an identity matrix; ffprobe prints no rotation then.
            if present != 0 { info.rotation = rotation == 0 ? 0 : rotation }
        case AVMEDIA_TYPE_AUDIO:
            if codec.sample_rate > 0 { info.sampleRate = Int(codec.sample_rate) }
            let channels = ingest_av_channels(parameters)
            if channels > 0 { info.channels = Int(channels) }
            info.channelLayout = channelLayout(parameters, channels: channels, headerOnly: headerOnly)
        default: break
        }
        return info
    }

    /// FFmpeg's name for the profile; the number when it has none (ffprobe prints VP8's 0 so); or, when the
    /// stream declares none, what the codec's extradata says.
    private static func profileName(_ codec: AVCodecParameters, codecName: String?) -> String? {
        if codec.profile != FF_PROFILE_UNKNOWN, let profile = avcodec_profile_name(codec.codec_id, codec.profile) {
            return String(cString: profile)
        } else if codec.profile != FF_PROFILE_UNKNOWN {
            return String(codec.profile)
        }
        return ExtradataProfile.name(codec: codecName, extradata: codec.extradata, size: Int(codec.extradata_size))
    }

    /// The channel layout's name ("stereo", "5.1(side)"), nil when FFmpeg has none.
    private static func channelLayout(
        _ parameters: UnsafeMutablePointer<AVCodecParameters>, channels: Int32, headerOnly: Bool
    ) -> String? {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 128) { buffer in
            guard let base = buffer.baseAddress else { return nil }
            ingest_av_channel_layout_describe(parameters, base, buffer.count)
            if base[0] == 0, channels > 0, headerOnly {
                // The mov header gives only a count; the decoder (and so ffprobe) assumes the default
                // layout for it, as av_channel_layout_default does.
                var layout = AVChannelLayout()
                av_channel_layout_default(&layout, channels)
                if av_channel_layout_describe(&layout, base, buffer.count) < 0 { base[0] = 0 }
                av_channel_layout_uninit(&layout)
            }
            let text = String(cString: base)
            return text.isEmpty ? nil : text
        }
    }

    /// An `AVDictionary` as a Swift dictionary (`av_dict_get` with an empty key and `AV_DICT_IGNORE_SUFFIX`).
    static func dictionary(_ dictionary: OpaquePointer?) -> [String: String] {
        var result: [String: String] = [:]
        var entry: UnsafeMutablePointer<AVDictionaryEntry>? = nil
        while let next = av_dict_get(dictionary, "", entry, AV_DICT_IGNORE_SUFFIX) {
            if let key = next.pointee.key, let value = next.pointee.value {
                result[String(cString: key)] = String(cString: value)
            }
            entry = next
        }
        return result
    }
}

/// Profile names from codec configuration records, for when `avformat_find_stream_info` was skipped (the mov
/// header carries the avcC/esds bytes but FFmpeg only fills `profile` after parsing or decoding).
enum ExtradataProfile {
    static func name(codec: String?, extradata: UnsafeMutablePointer<UInt8>?, size: Int) -> String? {
        guard let codec, let extradata, size > 0 else { return nil }
        let bytes = UnsafeBufferPointer(start: extradata, count: size)
        switch codec {
        case "h264":
            // AVCDecoderConfigurationRecord: version, profile_idc, constraint flags, level.
            guard bytes.count >= 4, bytes[0] == 1 else { return nil }
            var profile = Int32(bytes[1])
            let constraints = bytes[2]
            if profile == 66, constraints & 0x40 != 0 { profile |= FF_PROFILE_H264_CONSTRAINED }
            if [110, 122, 244].contains(bytes[1]), constraints & 0x10 != 0 { profile |= FF_PROFILE_H264_INTRA }
            return avcodec_profile_name(AV_CODEC_ID_H264, profile).map { String(cString: $0) }
        case "hevc":
            // HEVCDecoderConfigurationRecord: version, then profile_space(2) tier(1) profile_idc(5).
            guard bytes.count >= 2, bytes[0] == 1 else { return nil }
            return avcodec_profile_name(AV_CODEC_ID_HEVC, Int32(bytes[1] & 0x1F)).map { String(cString: $0) }
        case "aac":
            // AudioSpecificConfig: audioObjectType in the first 5 bits; FFmpeg's AAC profile is that minus 1.
            guard bytes.count >= 2 else { return nil }
            let objectType = Int32(bytes[0] >> 3)
            guard objectType > 0, objectType != 31 else { return nil }
            return avcodec_profile_name(AV_CODEC_ID_AAC, objectType - 1).map { String(cString: $0) }
        default:
            return nil
        }
    }
}
