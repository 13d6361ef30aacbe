import Foundation
import Testing

@testable import IngestCore
@testable import IngestNetwork
@testable import IngestStages
@testable import IngestStagesTestSupport

/// The `video` stage against clips made here with the ffmpeg CLI; ffprobe (with packet counts) is the oracle.
@Suite struct VideoStageTests {
    func stage(_ configure: (inout VideoStage.Options) -> Void = { _ in }) throws -> VideoStage {
        var options = VideoStage.Options()
        configure(&options)
        return try VideoStage(options: options)
    }

    /// A clip with testsrc2 video and a sine track.
    func makeClip(
        _ folder: MediaFolder, _ name: String, size: String = "640x360", rate: Int = 25, seconds: Double = 2,
        video: String = "-c:v mpeg4 -q:v 5", audio: String = "-c:a pcm_s16le", extra: String = ""
    ) throws -> String {
        let path = folder.file(name)
        try folder.ffmpeg(
            "-f lavfi -i testsrc2=size=\(size):rate=\(rate) -f lavfi -i 'sine=frequency=440:sample_rate=48000' "
                + "-t \(seconds) \(video) \(audio) \(extra) '\(path)'")
        return path
    }

    @Test func transcodesToH264AndAACWithinLimits() throws {
        let folder = try MediaFolder("video")
        let input = try makeClip(folder, "clip.mov")
        let (item, fact) = try folder.run(try stage { $0.maxWidth = 320 }, input)
        let output = folder.workDirectory + "/video/0/clip.mov.mp4"
        #expect(item.artifact == output)
        #expect(fact["action"]?.stringValue == "transcoded")
        #expect(fact["video"]?.stringValue == "encoded")
        #expect(fact["audio"]?.stringValue == "encoded")
        #expect(fact["after"]?["width"]?.doubleValue == 320)
        #expect(fact["before"]?["video_codec"]?.stringValue == "mpeg4")
        let video = try #require(try folder.stream(output, "video"))
        #expect(video["codec_name"] as? String == "h264")
        #expect(video["width"] as? Int == 320)
        #expect(video["height"] as? Int == 180)
        #expect(video["pix_fmt"] as? String == "yuv420p")
        #expect(video["nb_read_packets"] as? String == "50")
        let audio = try #require(try folder.stream(output, "audio"))
        #expect(audio["codec_name"] as? String == "aac")
        #expect(audio["sample_rate"] as? String == "48000")
        #expect(abs(try folder.duration(output) - 2) <= 1.0 / 25)
        #expect(try folder.moovBeforeMdat(output))
        #expect(folder.filesInWork() == ["video/0/clip.mov.mp4"])
    }

    @Test func rotationIsKeptAsMetadataAndLimitsApplyToTheDisplayedSize() throws {
        let folder = try MediaFolder("video-rotation")
        // Recorded landscape 640×360 with a quarter-turn matrix: displayed as 360×640 portrait.
        // FFmpeg 5.1's CLI turns the `rotate` tag into a display matrix only when stream copying.
        let recorded = try makeClip(folder, "landscape.mov", video: "-c:v libx264 -preset ultrafast", audio: "-c:a aac")
        let input = folder.file("portrait.mov")
        try folder.ffmpeg("-i '\(recorded)' -c copy -metadata:s:v rotate=90 '\(input)'")
        let before = try folder.rotation(input)
        #expect(abs(before) == 90)
        let (item, fact) = try folder.run(
            try stage {
                $0.maxHeight = 320
                $0.mode = .transcode
            }, input)
        let video = try #require(try folder.stream(item.artifact, "video"))
        // Displayed height 640 → 320: coded 320×180, still turned by the same matrix.
        #expect(video["width"] as? Int == 320)
        #expect(video["height"] as? Int == 180)
        #expect(try folder.rotation(item.artifact) == before)
        #expect(fact["rotation"]?.stringValue == "kept as display matrix")
    }

    /// What an iPhone records: HEVC 10-bit in a .mov; the stage must convert to 8-bit 4:2:0 H.264 in auto mode.
    @Test func hevcTenBitBecomesEightBitH264() throws {
        let folder = try MediaFolder("video-hevc")
        let input = try makeClip(
            folder, "iphone.mov", size: "480x270", seconds: 1,
            video: "-c:v libx265 -preset ultrafast -pix_fmt yuv420p10le -tag:v hvc1 -x265-params log-level=error",
            audio: "-c:a aac -ac 2")
        let (item, fact) = try folder.run(try stage(), input)
        #expect(fact["video"]?.stringValue == "encoded")
        #expect(fact["audio"]?.stringValue == "copied")
        let video = try #require(try folder.stream(item.artifact, "video"))
        #expect(video["codec_name"] as? String == "h264")
        #expect(video["pix_fmt"] as? String == "yuv420p")
        #expect(video["width"] as? Int == 480)
        #expect(video["nb_read_packets"] as? String == "25")
        #expect(abs(try folder.duration(item.artifact) - 1) <= 1.0 / 25)
    }

    @Test func compliantStreamsAreRemuxed() throws {
        let folder = try MediaFolder("video-remux")
        let input = try makeClip(
            folder, "clip.mp4", video: "-c:v libx264 -preset ultrafast", audio: "-c:a aac -b:a 96k",
            extra: "-metadata creation_time=2025-01-02T03:04:05.000000Z")
        #expect(try !folder.moovBeforeMdat(input))
        let (item, fact) = try folder.run(try stage { $0.maxWidth = 1280 }, input)
        #expect(fact["action"]?.stringValue == "remuxed")
        #expect(try folder.moovBeforeMdat(item.artifact))
        for type in ["video", "audio"] {
            let before = try #require(try folder.stream(input, type))
            let after = try #require(try folder.stream(item.artifact, type))
            #expect(after["codec_name"] as? String == before["codec_name"] as? String)
            #expect(after["nb_read_packets"] as? String == before["nb_read_packets"] as? String)
            #expect(after["bit_rate"] as? String == before["bit_rate"] as? String)
        }
        let tags = try folder.probe(item.artifact).format["tags"] as? [String: Any]
        #expect(tags?["creation_time"] as? String == "2025-01-02T03:04:05.000000Z")
    }

    @Test func forcedRemuxFromMatroskaToMov() throws {
        let folder = try MediaFolder("video-mkv")
        let input = try makeClip(
            folder, "clip.mkv", video: "-c:v libx264 -preset ultrafast", audio: "-c:a aac")
        let (item, fact) = try folder.run(
            try stage {
                $0.mode = .remux
                $0.container = .mov
                $0.maxWidth = 100
            }, input)
        #expect(fact["action"]?.stringValue == "remuxed")
        #expect(item.artifact.hasSuffix("/video/0/clip.mkv.mov"))
        let tags = try folder.probe(item.artifact).format["tags"] as? [String: Any]
        #expect(tags?["major_brand"] as? String == "qt  ")
        let video = try #require(try folder.stream(item.artifact, "video"))
        #expect(video["width"] as? Int == 640)
        #expect(video["nb_read_packets"] as? String == "50")
    }

    @Test func frameRateIsCapped() throws {
        let folder = try MediaFolder("video-fps")
        let input = try makeClip(folder, "fast.mov", size: "320x240", rate: 50, video: "-c:v mpeg4")
        let (item, fact) = try folder.run(try stage { $0.maxFPS = 25 }, input)
        let video = try #require(try folder.stream(item.artifact, "video"))
        let packets = Int(video["nb_read_packets"] as? String ?? "") ?? 0
        #expect((49...51).contains(packets), "\(packets) frames")
        #expect(fact["frames_dropped"]?.doubleValue == 50)
        #expect(abs(try folder.duration(item.artifact) - 2) <= 1.0 / 25)
    }

    /// Ctrl-C during a transcode: the run's cancellation stops the packet loop (it used to run to the end of the
    /// file), the file fails as interrupted, and neither the output nor its temp file is left in the work folder.
    @Test func aCancelledRunStopsTheTranscodeMidFile() throws {
        let folder = try MediaFolder("video-cancel")
        let input = try makeClip(folder, "long.mov", seconds: 20)
        let item = folder.item(input)
        let cancellation = RunCancellation()
        var context = StageContext(
            settings: RunSettings(workDirectory: folder.workDirectory, environment: [:]), cancellation: cancellation)
        let total = item.size
        let reports = ProgressReports()
        // Cancelled once the transcode has read a tenth of the file: as a signal arriving mid-file would.
        context.progress = { done, _ in
            reports.record(done)
            if done > total / 10 { cancellation.cancel(reason: "SIGINT") }
        }
        let error = #expect(throws: ItemFailed.self) {
            _ = try stage { $0.mode = .transcode }.run(item, context: context)
        }
        let failure = try #require(error?.failures.first)
        #expect(failure.rule.rawValue == "interrupted", "\(failure)")
        #expect(failure.message == "interrupted (SIGINT) during the transcode; the next run repeats it")
        // Stopped well before the end of the file (the last progress report came at the cancel).
        #expect(reports.last > total / 10 && reports.last < total / 2, "\(reports.last) of \(total)")
        #expect(folder.filesInWork().isEmpty, "\(folder.filesInWork())")
    }

    /// The bytes read as the transcode last reported them (progress comes from the transcoding thread).
    final class ProgressReports: @unchecked Sendable {
        private let lock = NSLock()
        private var latest: Int64 = 0
        func record(_ done: Int64) { lock.withLock { latest = done } }
        var last: Int64 { lock.withLock { latest } }
    }

    @Test func corruptVideoFailsByDefaultAndLeavesNothing() throws {
        let folder = try MediaFolder("video-corrupt")
        let input = try makeClip(
            folder, "broken.mp4", seconds: 4, video: "-c:v libx264 -preset ultrafast -g 25", audio: "-an",
            extra: "-movflags +faststart")
        try folder.corrupt(input, at: 0.5, count: 20000)
        let original = try Data(contentsOf: URL(fileURLWithPath: input))
        let failure = try #require(try folder.failure(try stage { $0.mode = .transcode }, input))
        #expect(failure.rule.rawValue == "corrupt")
        #expect(failure.message.contains("h264 decoder"), "\(failure.message)")
        #expect(folder.filesInWork().isEmpty, "\(folder.filesInWork())")
        #expect(try Data(contentsOf: URL(fileURLWithPath: input)) == original)

        let (item, fact) = try folder.run(
            try stage {
                $0.mode = .transcode
                $0.onDecodeError = .skip
            }, input)
        #expect((fact["decode_errors_skipped"]?.doubleValue ?? 0) > 0)
        let video = try #require(try folder.stream(item.artifact, "video"))
        #expect(video["codec_name"] as? String == "h264")
        #expect(folder.filesInWork() == ["video/0/broken.mp4.mp4"])
    }

    /// An upload cut short (moov first, media data truncated): even a stream copy must notice the missing packets.
    @Test func truncatedFileFailsEvenWhenRemuxing() throws {
        let folder = try MediaFolder("video-truncated")
        let whole = try makeClip(
            folder, "whole.mp4", video: "-c:v libx264 -preset ultrafast", audio: "-c:a aac",
            extra: "-movflags +faststart")
        let input = folder.file("cut.mp4")
        let size = try #require(try FileManager.default.attributesOfItem(atPath: whole)[.size] as? NSNumber).intValue
        try folder.sh("head -c \(size * 2 / 3) '\(whole)' > '\(input)'")
        let failure = try #require(try folder.failure(try stage(), input))
        #expect(failure.rule.rawValue == "corrupt")
        #expect(failure.message.contains("cut short"), "\(failure.message)")
        #expect(folder.filesInWork().isEmpty)
    }

    /// A clip cut with an edit list (as phone editors trim) lists samples the demuxer skips: still complete.
    @Test func editListIsNotMistakenForTruncation() throws {
        let folder = try MediaFolder("video-editlist")
        let whole = try makeClip(
            folder, "whole.mp4", seconds: 3, video: "-c:v libx264 -preset veryfast", audio: "-c:a aac")
        let input = folder.file("trimmed.mp4")
        try folder.ffmpeg("-ss 1.3 -i '\(whole)' -c copy '\(input)'")
        let (item, fact) = try folder.run(try stage(), input)
        #expect(fact["action"]?.stringValue == "remuxed")
        #expect(abs(try folder.duration(item.artifact) - (try folder.duration(input))) <= 1.0 / 25)
    }

    @Test func unsupportedCodecIsNamed() throws {
        let folder = try MediaFolder("video-codec")
        let input = try makeClip(folder, "odd.mp4", video: "-c:v libx264 -preset ultrafast", audio: "-an")
        try folder.patchSampleEntry(input, "avc1", "zzzz")
        let failure = try #require(try folder.failure(try stage { $0.mode = .transcode }, input))
        #expect(failure.rule.rawValue == "unsupported")
        #expect(failure.message.contains("zzzz"), "\(failure.message)")
        #expect(folder.filesInWork().isEmpty)
    }

    @Test func audioFileIsNotAMovie() throws {
        let folder = try MediaFolder("video-audio")
        let input = folder.file("a.m4a")
        try folder.ffmpeg("-f lavfi -i 'sine=duration=1' '\(input)'")
        let failure = try #require(try folder.failure(try stage(), input))
        #expect(failure.rule.rawValue == "unsupported" || failure.rule.rawValue == "no_video", "\(failure)")
    }

    @Test func fitKeepsAspectAndEvenSides() {
        #expect(
            VideoStage.fit(width: 1920, height: 1080, maxWidth: 1280, maxHeight: 720, swapped: false) == (1280, 720))
        #expect(VideoStage.fit(width: 1920, height: 1080, maxWidth: 1280, maxHeight: 720, swapped: true) == (720, 404))
        #expect(VideoStage.fit(width: 640, height: 360, maxWidth: nil, maxHeight: nil, swapped: false) == (640, 360))
        #expect(VideoStage.fit(width: 641, height: 361, maxWidth: nil, maxHeight: nil, swapped: false) == (640, 360))
    }
}
