import NativeCurl
import NativeFFmpeg
import NativeHEIF
import NativeJPEG
import NativePostgres
import NativeSQLite

/// What `ingest --version` prints: the tool's version, then the C libraries it runs on, each from its own runtime
/// version call, so a bug report names the FFmpeg or libcurl actually loaded, not the one the package was built
/// against.
enum VersionInfo {
    static let tool = "0.1.0"

    static var text: String {
        let pq = PostgresConnection.libraryVersion
        let libraries =
            FFmpegVersion.lines + [
                TurboJPEGCompressor.libraryVersion, CurlEasy.libraryVersion, HEIFImage.libraryVersion,
                "SQLite \(Database.libraryVersion)", "libpq \(pq / 10000).\(pq % 10000)",
            ]
        return (["ingest \(tool)"] + libraries).joined(separator: "\n")
    }
}
