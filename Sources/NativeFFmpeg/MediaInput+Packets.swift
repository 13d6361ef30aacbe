internal import CFFmpeg
internal import CFFmpegShims

/// Packet reading on the opened, guarded input: the transcoders use the same safe opener as the probe (allow-listed
/// demuxer, `file` protocol only, one open), then pull packets one at a time with `av_read_frame`.
extension MediaInput {
    /// Lifts the open's deadline: a transcode reads the whole file, which takes as long as it takes. The single-open
    /// rule of the guard stays in force.
    package func clearDeadline() { ingest_av_guard_start(guardState, 0) }

    /// Reads the next packet into `packet` (`av_read_frame`). Returns false at the end of the file (`AVERROR_EOF`
    /// is the normal end, not an error); throws `MediaInputError` with the demuxer's log lines otherwise.
    package func readPacket(into packet: MediaPacket) throws -> Bool {
        packet.unref()
        let (result, lines) = FFmpegLog.capturingErrors { av_read_frame(context, packet.pointer) }
        if result == FFmpegErrorCode.endOfFile.rawValue { return false }
        if result < 0 {
            throw MediaInputError(
                error: FFmpegError(call: "av_read_frame", code: FFmpegErrorCode(rawValue: result)), log: lines,
                timedOut: guardState.pointee.timed_out != 0, refusedOpens: refusedOpens)
        }
        return true
    }

    /// Bytes of the file read so far (`avio_tell`), for progress.
    package var bytesRead: Int64 {
        guard let pb = context.pointee.pb else { return 0 }
        return max(0, avio_tell(pb))
    }

    /// Lends the `AVStream` at `index` to `body` (nil when out of range); the pointer must not outlive the call.
    func withStream<R>(_ index: Int, _ body: (UnsafeMutablePointer<AVStream>?) throws -> R) rethrows -> R {
        guard index >= 0, index < Int(context.pointee.nb_streams) else { return try body(nil) }
        return try body(context.pointee.streams[index])
    }

    /// The stream's time base as (num, den).
    package func timeBase(ofStream index: Int) -> (num: Int32, den: Int32)? {
        withStream(index) { stream in stream.map { ($0.pointee.time_base.num, $0.pointee.time_base.den) } }
    }

    /// How many bytes the container's index says are missing for stream `index`: the end of its furthest sample
    /// (`avformat_index_get_entry`: position + size) past the end of the file. A truncated upload ends the
    /// demuxer early with a plain EOF, so this is how a cut-short file is told from a complete one. 0 when the
    /// data is all there or the container keeps no index (Matroska without cues, WAV).
    package func missingBytes(ofStream index: Int) -> Int64 {
        guard let pb = context.pointee.pb else { return 0 }
        let fileSize = avio_size(pb)
        guard fileSize > 0 else { return 0 }
        return max(0, indexEnd(ofStream: index) - fileSize)
    }

    /// The furthest byte any stream's index reaches (the end of its furthest sample), 0 when no stream keeps an
    /// index. Read from the index the demuxer built at open (the mov demuxer builds it from the moov's sample
    /// tables), so nothing is decoded or read from the media data.
    package var indexEnd: Int64 {
        (0..<Int(context.pointee.nb_streams)).reduce(0) { max($0, indexEnd(ofStream: $1)) }
    }

    /// The end of stream `index`'s furthest sample by its index entries (`avformat_index_get_entry`: position +
    /// size, walked in C by `ingest_av_index_end`); 0 without an index.
    private func indexEnd(ofStream index: Int) -> Int64 {
        withStream(index) { stream in stream.map { ingest_av_index_end($0) } ?? 0 }
    }

    /// The codec tag of a stream as four characters (`avc1`, `zzzz`), for naming codecs FFmpeg does not know.
    package func codecTag(ofStream index: Int) -> String? {
        withStream(index) { stream in
            guard let tag = stream?.pointee.codecpar?.pointee.codec_tag, tag != 0 else { return nil }
            let bytes = (0..<4).map { UInt8((tag >> (8 * UInt32($0))) & 0xFF) }
            let printable = bytes.map { (32...126).contains($0) ? Character(Unicode.Scalar($0)) : "?" }
            return String(printable)
        }
    }
}
