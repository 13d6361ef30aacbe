internal import CCurl
internal import CFFmpeg
internal import CHeif
internal import CIngestShims
internal import CPostgres
internal import CSQLite

/// The versions of the C libraries the process runs on, from their own runtime version calls (for `--version`):
/// a bug report then names the FFmpeg or libcurl actually loaded, not the one the package was built against.
package enum LibraryVersions {
    /// `name version` lines: FFmpeg and its libraries, libjpeg-turbo, libcurl with its TLS backend, libheif,
    /// SQLite, libpq.
    package static var lines: [String] {
        func dotted(_ packed: UInt32) -> String { "\(packed >> 16).\((packed >> 8) & 0xff).\(packed & 0xff)" }
        var lines = [
            "FFmpeg \(String(cString: av_version_info()))",
            "  libavformat \(dotted(avformat_version())), libavcodec \(dotted(avcodec_version())), "
                + "libavutil \(dotted(avutil_version())), libswscale \(dotted(swscale_version())), "
                + "libswresample \(dotted(swresample_version()))",
        ]
        let turbo = Int(ingest_jpeg_turbo_version_number())
        lines.append("libjpeg-turbo \(turbo / 1_000_000).\(turbo / 1000 % 1000).\(turbo % 1000) (built with)")
        if let curl = curl_version_info(CURLVERSION_FIRST)?.pointee {
            let version = curl.version.map { String(cString: $0) } ?? "?"
            let tls = curl.ssl_version.map { String(cString: $0) } ?? "no TLS"
            lines.append("libcurl \(version) (TLS: \(tls))")
        }
        lines.append("libheif \(heif_get_version().map { String(cString: $0) } ?? "?")")
        lines.append("SQLite \(String(cString: sqlite3_libversion()))")
        let pq = Int(PQlibVersion())
        lines.append("libpq \(pq / 10000).\(pq % 10000)")
        return lines
    }
}
