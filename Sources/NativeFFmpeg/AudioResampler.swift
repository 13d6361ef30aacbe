internal import CFFmpeg

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An `AVAudioFifo` (`av_audio_fifo_alloc`): the encoder wants exactly `frame_size` samples per frame, decoders
/// give whatever their packets hold, so samples wait here in between. At most about one decoded frame plus one
/// encoder frame is ever held. `deinit` calls `av_audio_fifo_free`.
final class AudioFIFO {
    private let fifo: OpaquePointer

    init(format: AVSampleFormat, channels: Int32) throws {
        guard let fifo = av_audio_fifo_alloc(format, channels, 2048) else {
            throw FFmpegError(call: "av_audio_fifo_alloc", code: .outOfMemory)
        }
        self.fifo = fifo
    }

    deinit { av_audio_fifo_free(fifo) }

    var count: Int { Int(av_audio_fifo_size(fifo)) }

    /// Appends the samples of `frame` (`av_audio_fifo_write`; the FIFO grows as needed).
    func write(_ frame: UnsafeMutablePointer<AVFrame>) throws {
        guard frame.pointee.nb_samples > 0, let data = frame.pointee.extended_data else { return }
        let planes = UnsafeMutableRawPointer(data).assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
        let written = av_audio_fifo_write(fifo, planes, frame.pointee.nb_samples)
        if written < 0 { throw FFmpegError(call: "av_audio_fifo_write", code: FFmpegErrorCode(rawValue: written)) }
    }

    /// Moves `count` samples into `frame`, whose buffers are already allocated for at least that many.
    func read(into frame: UnsafeMutablePointer<AVFrame>, count: Int32) throws {
        guard let data = frame.pointee.extended_data else {
            throw FFmpegError(call: "av_audio_fifo_read", code: FFmpegErrorCode(posix: EINVAL))
        }
        let planes = UnsafeMutableRawPointer(data).assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
        let read = av_audio_fifo_read(fifo, planes, count)
        if read < 0 { throw FFmpegError(call: "av_audio_fifo_read", code: FFmpegErrorCode(rawValue: read)) }
    }
}

/// A libswresample context (`swr_alloc_set_opts2` + `swr_init`) converting decoded audio (any sample format,
/// layout and rate) to what an encoder takes, and re-chunking it into the encoder's frame size through an
/// `AudioFIFO`. `deinit` calls `swr_free`.
package final class AudioResampler {
    private var context: OpaquePointer?
    private let fifo: AudioFIFO
    private let scratch: MediaFrame
    private let outputFormat: AVSampleFormat
    private let outputRate: Int32
    private var outputLayout = AVChannelLayout()

    /// A resampler from the format of `first` (a decoded frame) to the input format of `encoder`.
    package init(from first: MediaFrame, to encoder: MediaEncoder) throws {
        let target = encoder.context.pointee
        outputFormat = target.sample_fmt
        outputRate = target.sample_rate
        scratch = try MediaFrame()
        fifo = try AudioFIFO(format: target.sample_fmt, channels: target.ch_layout.nb_channels)
        var outLayout = target.ch_layout
        try ffmpegCall("av_channel_layout_copy") { av_channel_layout_copy(&outputLayout, &outLayout) }
        let source = first.pointer
        var inputLayout = AVChannelLayout()
        defer { av_channel_layout_uninit(&inputLayout) }
        if source.pointee.ch_layout.order == AV_CHANNEL_ORDER_UNSPEC || source.pointee.ch_layout.nb_channels == 0 {
            // A WAV or mov header may give only a count: assume the usual layout for it, as FFmpeg's CLI does.
            av_channel_layout_default(&inputLayout, max(1, source.pointee.ch_layout.nb_channels))
        } else {
            try ffmpegCall("av_channel_layout_copy") {
                av_channel_layout_copy(&inputLayout, &source.pointee.ch_layout)
            }
        }
        var swr: OpaquePointer? = nil
        try ffmpegCall("swr_alloc_set_opts2") {
            swr_alloc_set_opts2(
                &swr, &outputLayout, outputFormat, outputRate, &inputLayout,
                AVSampleFormat(rawValue: source.pointee.format), source.pointee.sample_rate, 0, nil)
        }
        do {
            try ffmpegCall("swr_init") { swr_init(swr) }
        } catch {
            swr_free(&swr)
            throw error
        }
        context = swr
    }

    deinit {
        swr_free(&context)
        av_channel_layout_uninit(&outputLayout)
    }

    /// Converts `frame` (nil: flush the resampler's delay at the end) and queues the result.
    package func push(_ frame: MediaFrame?) throws {
        scratch.unref()
        let out = scratch.pointer
        out.pointee.format = outputFormat.rawValue
        out.pointee.sample_rate = outputRate
        try ffmpegCall("av_channel_layout_copy") { av_channel_layout_copy(&out.pointee.ch_layout, &outputLayout) }
        if let frame, frame.pointer.pointee.ch_layout.order == AV_CHANNEL_ORDER_UNSPEC {
            // Match the default layout the context was made with, or swr_convert_frame reports a changed input.
            let count = frame.pointer.pointee.ch_layout.nb_channels
            av_channel_layout_uninit(&frame.pointer.pointee.ch_layout)
            av_channel_layout_default(&frame.pointer.pointee.ch_layout, max(1, count))
        }
        try ffmpegCall("swr_convert_frame") { swr_convert_frame(context, out, frame?.pointer) }
        try fifo.write(out)
        scratch.unref()
    }

    /// Samples waiting for the encoder.
    package var buffered: Int { fifo.count }

    /// Fills `frame` with the next `count` queued samples in the encoder's format (`count` ≤ `buffered`).
    package func pull(into frame: MediaFrame, count: Int) throws {
        frame.unref()
        let out = frame.pointer
        out.pointee.format = outputFormat.rawValue
        out.pointee.sample_rate = outputRate
        out.pointee.nb_samples = Int32(count)
        try ffmpegCall("av_channel_layout_copy") { av_channel_layout_copy(&out.pointee.ch_layout, &outputLayout) }
        try ffmpegCall("av_frame_get_buffer") { av_frame_get_buffer(out, 0) }
        try fifo.read(into: out, count: Int32(count))
    }
}
