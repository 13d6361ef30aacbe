import Foundation
import Testing

@testable import IngestTestSupport

/// Memory stays bounded whatever the recording's length (issue 31 §2): poster, sheet and proxy of a clip twelve
/// times longer take about the same peak memory, because the pass holds one decoded frame for the poster, the
/// sheet's small tiles and what the transcoder holds, never the frames it has seen. The kernel measures the peak
/// (`getrusage` of the waited child); the test compares two runs, not a machine-dependent figure.
@Suite(.serialized) struct OutputMemoryTests {
    /// Peak resident memory, in KiB, of `ingest run` making a poster (at a time past the end: every frame is a
    /// candidate until the last), a 12-tile sheet and a small proxy of `clip`.
    static func peakKiB(_ folder: TemporaryFolder, clip: String) throws -> Int {
        let pipeline = try folder.file(
            "p.yml",
            """
            version: 1
            name: memory
            stages:
              - poster: { at: 600s }
              - thumbnails: { count: 12 }
              - video: { output: proxy, max_width: 160, mode: transcode, preset: ultrafast }

            """)
        let measure =
            "import resource, subprocess, sys; code = subprocess.run(sys.argv[1:]).returncode; "
            + "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(code)"
        let run = try runCommand(
            "/usr/bin/python3",
            ["-c", measure, URL(fileURLWithPath: TestPaths.ingest).path, "run", pipeline, clip, "-q", "--no-journal"],
            environment: environmentWithoutProxies([:]), directory: folder.path)
        try #require(run.status == 0, "\(run.stdout)\(run.stderr)")
        return try #require(Int(run.stdout.split(separator: "\n").last ?? ""), "\(run.stdout)")
    }

    /// 2 s and 24 s of noisy 640×360 at 25 fps: holding the frames seen would take 600 × 345 KB (about 200 MB)
    /// more for the long clip; bounded, the two peaks differ by a few MB.
    @Test func peakMemoryDoesNotGrowWithTheRecordingsLength() throws {
        let folder = try TemporaryFolder("output-memory")
        defer { folder.remove() }
        for seconds in [2, 24] {
            let made = try runCommand(
                "/bin/sh",
                [
                    "-c",
                    "cd '\(folder.path)' && ffmpeg -nostdin -v error -y -f lavfi -i testsrc2=size=640x360:rate=25 "
                        + "-f lavfi -i sine=sample_rate=48000 -vf noise=alls=20:allf=t -t \(seconds) "
                        + "-c:v mpeg4 -q:v 4 -c:a aac clip\(seconds).mov",
                ])
            try #require(made.status == 0, "\(made.stderr)")
        }
        let short = try Self.peakKiB(folder, clip: folder.path + "/clip2.mov")
        let long = try Self.peakKiB(folder, clip: folder.path + "/clip24.mov")
        #expect(long - short < 48 * 1024, "peak RSS \(short) KiB for 2 s, \(long) KiB for 24 s")
    }
}
