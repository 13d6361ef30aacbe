internal import CFFmpeg

/// One `AVPacket` (`av_packet_alloc`), reused for every packet of a file: each read or receive refills it and the
/// consumer unrefs it; `deinit` calls `av_packet_free`. The pointer stays inside IngestNative.
package final class MediaPacket {
    let pointer: UnsafeMutablePointer<AVPacket>

    package init() throws {
        guard let pointer = av_packet_alloc() else { throw FFmpegError(call: "av_packet_alloc", code: .outOfMemory) }
        self.pointer = pointer
    }

    deinit {
        var local: UnsafeMutablePointer<AVPacket>? = pointer
        av_packet_free(&local)
    }

    /// Drops the payload reference (`av_packet_unref`); the packet can be filled again.
    package func unref() { av_packet_unref(pointer) }

    /// Index of the stream the packet belongs to (input or output, depending on who filled it).
    package var streamIndex: Int { Int(pointer.pointee.stream_index) }
    package var size: Int { Int(pointer.pointee.size) }
    package var isKeyframe: Bool { pointer.pointee.flags & AV_PKT_FLAG_KEY != 0 }
}

/// One `AVFrame` (`av_frame_alloc`): decoded pictures or samples, refilled for each frame; `deinit` calls
/// `av_frame_free`.
package final class MediaFrame {
    let pointer: UnsafeMutablePointer<AVFrame>

    package init() throws {
        guard let pointer = av_frame_alloc() else { throw FFmpegError(call: "av_frame_alloc", code: .outOfMemory) }
        self.pointer = pointer
    }

    deinit {
        var local: UnsafeMutablePointer<AVFrame>? = pointer
        av_frame_free(&local)
    }

    /// Drops the buffers (`av_frame_unref`).
    package func unref() { av_frame_unref(pointer) }

    package var width: Int { Int(pointer.pointee.width) }
    package var height: Int { Int(pointer.pointee.height) }
    package var sampleCount: Int { Int(pointer.pointee.nb_samples) }
    /// The decoder's best guess of the presentation time, in the stream's time base; nil when unknown.
    package var bestEffortTimestamp: Int64? {
        let value = pointer.pointee.best_effort_timestamp
        return value == Int64.min ? nil : value
    }
}

extension MediaFrame {
    /// Readies a decoded or scaled frame for an encoder: its presentation time in the encoder's time base, and no
    /// picture type, so libx264 chooses keyframes itself instead of copying the source's (as FFmpeg's CLI does).
    package func prepareForEncoder(pts: Int64) {
        pointer.pointee.pts = pts
        // AV_PICTURE_TYPE_NONE (0): Swift 6.3 in language mode 6 does not find this file's enum constants.
        pointer.pointee.pict_type = AVPictureType(rawValue: 0)
    }

    /// The pixel format name (`yuv420p`), nil for audio frames or unknown formats.
    package var isYUV420P: Bool { pointer.pointee.format == MediaEncoder.yuv420p }
}
