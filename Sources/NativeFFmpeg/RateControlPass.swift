internal import CFFmpeg

/// Which pass of a two-pass encode an H.264 encoder runs. x264 keeps its per-frame statistics in a file (libx264's
/// `stats` option) rather than in memory, so a long recording costs disk, not RAM; pass 1 writes the file, every
/// pass 2 (a re-encode at a lower rate included) reads it.
package enum RateControlPass: Sendable, Equatable {
    /// Analysis pass: x264's fast first-pass settings (libx264's `fastfirstpass`, on by default, as `ffmpeg -pass 1`
    /// uses), statistics written to `statsPath`.
    case first(statsPath: String)
    /// Final pass: bits spread over the frames by the statistics at `statsPath`.
    case second(statsPath: String)

    package var statsPath: String {
        switch self {
        case .first(let path), .second(let path): path
        }
    }

    /// Every file x264 makes beside `statsPath` (the macroblock-tree file and both temp files), for clean-up.
    package static func files(statsPath: String) -> [String] {
        [statsPath, statsPath + ".temp", statsPath + ".mbtree", statsPath + ".mbtree.temp"]
    }

    /// Sets the codec flag and the stats file on a libx264 context before `avcodec_open2`.
    func apply(to context: UnsafeMutablePointer<AVCodecContext>, options: inout OpaquePointer?) {
        switch self {
        case .first: context.pointee.flags |= AV_CODEC_FLAG_PASS1
        case .second: context.pointee.flags |= AV_CODEC_FLAG_PASS2
        }
        av_dict_set(&options, "stats", statsPath, 0)
    }
}
