internal import CFFmpeg

/// FFmpeg's version as loaded, from its runtime calls (for `ingest --version`).
package enum FFmpegVersion {
    /// `FFmpeg 5.1.x` and the version of each of its libraries.
    package static var lines: [String] {
        func dotted(_ packed: UInt32) -> String { "\(packed >> 16).\((packed >> 8) & 0xff).\(packed & 0xff)" }
        return [
            "FFmpeg \(String(cString: av_version_info()))",
            "  libavformat \(dotted(avformat_version())), libavcodec \(dotted(avcodec_version())), "
                + "libavutil \(dotted(avutil_version())), libswscale \(dotted(swscale_version())), "
                + "libswresample \(dotted(swresample_version()))",
        ]
    }
}
