import Foundation
import Testing

@testable import IngestTestSupport

/// The whole process, watched by strace: probing a crafted playlist named `.mov` opens no other file and no socket.
/// ffprobe on the same file is the control: it does follow the playlist, so the trace can see what it looks for.
@Suite struct CraftedInputTraceTests {
    @Test func playlistNamedMovOpensNothingElse() throws {
        let folder = try TemporaryFolder("trace")
        defer { folder.remove() }
        let sentinel = try folder.file("secret/target.mov", "not really a movie")
        let crafted = try folder.file(
            "holiday.mov",
            "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\n\(sentinel)\n#EXTINF:2.0,\nhttp://127.0.0.1:9/x.ts\n"
                + "#EXT-X-ENDLIST\n")
        let log = folder.path + "/ingest.strace"
        let result = try runTool(
            "strace",
            ["-f", "-e", "trace=open,openat,connect", "-o", log, TestPaths.ingest, "probe", "--json", crafted])
        #expect(result.status == 1)
        #expect(result.stdout.contains("\"rule\":\"unsafe\""))
        let trace = try String(contentsOfFile: log, encoding: .utf8)
        #expect(trace.contains(crafted), "the trace must show the crafted file itself being opened")
        #expect(!trace.contains(sentinel), "ingest opened the file the playlist points at")
        #expect(!trace.contains("connect("), "ingest opened a socket")

        // Control: ffprobe follows the playlist to the other file.
        let controlLog = folder.path + "/ffprobe.strace"
        _ = try runTool(
            "strace", ["-f", "-e", "trace=open,openat,connect", "-o", controlLog, "ffprobe", "-v", "quiet", crafted])
        #expect(try String(contentsOfFile: controlLog, encoding: .utf8).contains(sentinel))
    }
}
