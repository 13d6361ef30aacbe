import Foundation
import Testing

@testable import IngestTestSupport

/// The sample runs of docs/walkthroughs/, as written, against the fixture backend that docs/walkthroughs/README.md's
/// command starts (its port file this test's own, not /tmp/port) or SeaweedFS, on folders laid out as each page says;
/// each run must print what its page shows. (Named `Seed…` so that scripts/run-tests.sh runs it in the process that
/// has SeaweedFS.)
@Suite struct SeedPipelinesWalkthroughs {
    /// A shell for a walkthrough with the fixture backend running, started by the README's command.
    static func withBackend(_ name: String, _ body: (DocShell) throws -> Void) throws {
        let shell = try DocShell(name)
        shell.replacing["/tmp/port"] = shell.folder.path + "/port"
        let backend = try shell.start(
            "python3 Tests/Fixtures/backend.py --port-file /tmp/port &", in: "docs/walkthroughs/README.md",
            waitingFor: shell.folder.path + "/port")
        defer { backend.stop() }
        try body(shell)
    }

    /// Runs the page's commands of `DocsCommandTests.tested` in order; a run that shows a `FAIL` line exits 1.
    static func runPage(_ file: String, in shell: DocShell) throws {
        for text in DocsCommandTests.tested[file]! {
            let failed = try DocShell.command(text, in: file).output?.contains { $0.hasPrefix("FAIL ") } ?? false
            try shell.run(text, in: file, status: failed ? 1 : 0)
        }
    }

    @Test func walkthroughsOnSamples() throws {
        try Self.withBackend("walkthroughs") { shell in
            try DocsCommandRuns.copy(
                [
                    "videos/located.mov": "good/located.mov", "videos/photo-named.mov": "bad/photo-named.mov",
                    "videos/plain.mov": "good/plain.mov", "videos/portrait.mov": "good/portrait.mov",
                    "videos/truncated.mov": "bad/truncated.mov", "photos/graphic.png": "good/graphic.png",
                    "photos/photo.heic": "good/photo.heic", "photos/photo.jpg": "good/photo.jpg",
                ], into: shell)
            for file in [
                "docs/walkthroughs/hockey-video-analyze.md", "docs/walkthroughs/hockey-video-signed-put.md",
                "docs/walkthroughs/vehicle-photos.md",
            ] {
                try Self.runPage(file, in: shell)
            }
        }
    }

    /// A 42-second recording, an ALAC one, one in a folder that is no pet id; then a second recording of a pet
    /// that already has one today.
    @Test func vetAudio() throws {
        try Self.withBackend("vet-audio") { shell in
            let petA = "3f0c6a52-9b1e-4d8a-a7c4-2e5d8b9f1a60"
            let petB = "b7e2d1c4-5a6f-4e3b-9c8d-7f1a2b3c4d5e"
            try DocsCommandRuns.copy(
                [
                    "recordings/\(petA)/visit-2024-12-19.m4a": "good/voice.m4a",
                    "later/\(petA)/afternoon.m4a": "good/voice.m4a",
                ], into: shell)
            try Self.makeAudio(shell.folder.path + "/recordings/\(petB)/checkup.m4a", seconds: 42)
            try Self.makeAudio(shell.folder.path + "/recordings/\(petB)/lossless.m4a", seconds: 1, codec: "alac")
            try Self.makeAudio(shell.folder.path + "/recordings/fluffy/checkup.m4a", seconds: 42)
            try Self.runPage("docs/walkthroughs/vet-audio.md", in: shell)
        }
    }

    /// Against SeaweedFS: its endpoint and keys stand in for the page's (`127.0.0.1:18333`, `AKIDDEMO`, `…`).
    @Test func crowdGeotag() throws {
        let server = try SeaweedFS.shared()
        try server.createBucket("crowd-media")
        let shell = try DocShell("crowd-geotag")
        shell.replacing = [
            "http://127.0.0.1:18333": server.endpoint, "AKIDDEMO": server.accessKey,
            "AWS_SECRET_ACCESS_KEY=…": "AWS_SECRET_ACCESS_KEY=" + server.secretKey,
        ]
        try DocsCommandRuns.copy(
            [
                "media/misc/photo-named.mov": "bad/photo-named.mov", "media/misc/plain.mov": "good/plain.mov",
                "media/stockholm/located.mov": "good/located.mov", "media/stockholm/photo.heic": "good/photo.heic",
                "media/stockholm/photo.jpg": "good/photo.jpg",
            ], into: shell)
        let photo = shell.folder.path + "/media/trip/IMG_0042.JPG"
        let made = try runCommand(
            "/bin/sh",
            [
                "-c",
                "mkdir -p \"$(dirname '\(photo)')\" && ffmpeg -nostdin -v error -y -f lavfi -i testsrc=size=240x160 "
                    + "-frames:v 1 -f image2 -c:v mjpeg '\(photo)' && exiftool -q -overwrite_original "
                    + "-GPSLatitude=37.7749 -GPSLatitudeRef=N -GPSLongitude=122.4194 -GPSLongitudeRef=W '\(photo)'",
            ])
        try #require(made.status == 0, "\(made.stderr)")
        try Self.runPage("docs/walkthroughs/crowd-geotag.md", in: shell)
    }

    /// A `seconds`-long tone encoded with `codec` at `path` (ffmpeg).
    static func makeAudio(_ path: String, seconds: Int, codec: String = "aac") throws {
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let made = try runTool(
            "ffmpeg",
            [
                "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                "sine=frequency=330:duration=\(seconds):sample_rate=44100", "-ac", "1", "-c:a", codec, path,
            ])
        try #require(made.status == 0, "\(made.stderr)")
    }
}
