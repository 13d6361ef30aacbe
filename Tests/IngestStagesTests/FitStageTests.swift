import Foundation
import Testing

@testable import IngestCore
@testable import IngestMedia
@testable import IngestNetwork
@testable import IngestStages
@testable import IngestStagesTestSupport

/// `video: { fit }` and `audio: { fit }` against noisy clips made here with the ffmpeg CLI (testsrc2 plus noise, so
/// they do not compress to nothing), with limits chosen so the stage must encode, must step the picture down, and
/// must fail `cannot_fit`; ffprobe and the file's size are the oracle.
@Suite struct FitStageTests {
    func video(_ maxBytes: Int64, _ configure: (inout VideoStage.Options) -> Void = { _ in }) throws -> VideoStage {
        var options = VideoStage.Options()
        var fit = FitOptions()
        fit.maxBytes = ByteSize(bytes: maxBytes)
        options.fit = fit
        options.preset = "ultrafast"
        configure(&options)
        return try VideoStage(options: options)
    }

    /// Four seconds of noisy testsrc2 at `size` and 25 fps with a 48 kHz sine, in MPEG-4 part 2 (not H.264: it must
    /// be encoded) unless `codecs` says otherwise.
    func noisyClip(
        _ folder: MediaFolder, _ name: String, size: String, seconds: Int = 4,
        codecs: String = "-c:v mpeg4 -q:v 2 -c:a pcm_s16le"
    ) throws -> String {
        let path = folder.file(name)
        try folder.ffmpeg(
            "-f lavfi -i testsrc2=size=\(size):rate=25 -f lavfi -i 'sine=frequency=440:sample_rate=48000' "
                + "-vf noise=alls=30:allf=t -t \(seconds) \(codecs) '\(path)'")
        return path
    }

    func size(_ path: String) throws -> Int64 {
        try #require((try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value)
    }

    /// 640×360 at 0.6 MB leaves about 0.9 Mbit/s of video, above the floor: encoded at 360p, under the limit, and
    /// close to it (the budget spent, not a blind CRF's guess).
    @Test func anOversizeRecordingIsEncodedUnderTheLimit() throws {
        let folder = try MediaFolder("fit-encode")
        let input = try noisyClip(folder, "clip.mov", size: "640x360")
        #expect(try size(input) > 600_000)
        let (item, fact) = try folder.run(try video(600_000), input)
        let written = try size(item.artifact)
        #expect(written <= 600_000)
        #expect(written > 450_000, "\(written) bytes: the budget was not used")
        #expect(fact["video"]?.stringValue == "encoded")
        #expect(fact["fit"]?["action"]?.stringValue == "encoded")
        #expect(fact["fit"]?["step"]?.stringValue == "360p")
        #expect(fact["fit"]?["scaled"] == .bool(false))
        #expect(fact["fit"]?["bytes"] == .int(written))
        let stream = try #require(try folder.stream(item.artifact, "video"))
        #expect(stream["codec_name"] as? String == "h264")
        #expect(stream["width"] as? Int == 640)
        // Pass 1's output and x264's statistics are gone; only the output stays.
        #expect(folder.filesInWork() == ["video/0/clip.mov.mp4"])
    }

    /// 1280×720 at the same 0.6 MB: 720p would get under 0.05 bits per pixel, 540p gets more.
    @Test func aLimitTooTightForThePictureStepsItDown() throws {
        let folder = try MediaFolder("fit-step")
        let input = try noisyClip(folder, "clip.mov", size: "1280x720")
        let (item, fact) = try folder.run(try video(600_000), input)
        #expect(try size(item.artifact) <= 600_000)
        #expect(fact["fit"]?["step"]?.stringValue == "540p")
        #expect(fact["fit"]?["scaled"] == .bool(true))
        let stream = try #require(try folder.stream(item.artifact, "video"))
        #expect(stream["width"] as? Int == 960)
        #expect(stream["height"] as? Int == 540)
    }

    /// 150 KB for four seconds leaves about 30 kbit/s of video: under the floor even at the smallest step.
    @Test func aLimitNoStepCanMeetFailsCannotFit() throws {
        let folder = try MediaFolder("fit-cannot")
        let input = try noisyClip(folder, "clip.mov", size: "640x360")
        let failure = try #require(try folder.failure(try video(150_000), input))
        #expect(failure.rule == .cannotFit)
        #expect("\(failure.stage).\(failure.rule)" == "video.cannot_fit")
        #expect(failure.message.contains("4.0 s"))
        #expect(failure.message.contains("150000 bytes"))
        // The needed rate: 640×360 at 25 fps and 0.05 bits per pixel is 288 kbit/s, plus 128 kbit/s of AAC.
        #expect(failure.message.contains("needs 416 kbit/s"), "\(failure.message)")
        #expect(failure.message.contains("the limit leaves 15"), "\(failure.message)")
        #expect(folder.filesInWork().isEmpty)
    }

    /// A compliant H.264/AAC recording under the limit, in the stage's container, is passed through untouched: the
    /// item's file is what is sent, byte for byte, and nothing is written.
    @Test func aCompliantRecordingThatFitsIsPassedThroughUntouched() throws {
        let folder = try MediaFolder("fit-pass")
        let input = try noisyClip(
            folder, "clip.mp4", size: "320x180", codecs: "-c:v libx264 -preset ultrafast -c:a aac")
        let (item, fact) = try folder.run(try video(10_000_000), input)
        #expect(fact["action"]?.stringValue == "passed_through")
        #expect(fact["fit"]?["action"]?.stringValue == "passed through")
        #expect(item.artifact == input)
        #expect(folder.filesInWork().isEmpty)
    }

    /// The same streams in a .mov while the stage writes MP4: copied into the new container, still under the limit.
    @Test func aCompliantRecordingInAnotherContainerIsRemuxed() throws {
        let folder = try MediaFolder("fit-remux")
        let input = try noisyClip(
            folder, "clip.mov", size: "320x180", codecs: "-c:v libx264 -preset ultrafast -c:a aac")
        let (item, fact) = try folder.run(try video(10_000_000), input)
        #expect(fact["fit"]?["action"]?.stringValue == "remuxed")
        #expect(fact["video"]?.stringValue == "copied")
        #expect(item.artifact != input)
        #expect(try size(item.artifact) <= 10_000_000)
    }

    /// A compliant recording over the limit is not copied: it is encoded to fit.
    @Test func aCompliantRecordingOverTheLimitIsEncoded() throws {
        let folder = try MediaFolder("fit-compliant-large")
        let input = try noisyClip(
            folder, "clip.mp4", size: "640x360", codecs: "-c:v libx264 -preset ultrafast -qp 10 -c:a aac")
        #expect(try size(input) > 600_000)
        let (item, fact) = try folder.run(try video(600_000), input)
        #expect(fact["fit"]?["action"]?.stringValue == "encoded")
        #expect(try size(item.artifact) <= 600_000)
    }

    /// A first attempt forced three times too high overshoots; the stage encodes again lower and keeps only an
    /// output under the limit.
    @Test func anOvershootIsEncodedAgainLower() throws {
        let folder = try MediaFolder("fit-retry")
        let input = try noisyClip(folder, "clip.mov", size: "640x360")
        var stage = try video(600_000)
        stage.fitAttemptScales = [3]
        let (item, fact) = try folder.run(stage, input)
        guard case .array(let attempts)? = fact["fit"]?["attempts"] else {
            Issue.record("no attempts in \(String(describing: fact["fit"]))")
            return
        }
        #expect(attempts.count >= 2)
        #expect((attempts.first?["bytes"]?.doubleValue ?? 0) > 600_000)
        #expect(try size(item.artifact) <= 600_000)
        #expect(folder.filesInWork() == ["video/0/clip.mov.mp4"])
    }

    /// A `validate` after the fitting stage checks the file that will be sent, not the original.
    @Test func validateAfterFitChecksTheOutput() throws {
        let folder = try MediaFolder("fit-validate")
        let input = try noisyClip(folder, "clip.mov", size: "640x360")
        var rules = ValidateStage.Options()
        rules.maxBytes = ByteSize(bytes: 600_000)
        let validate = try ValidateStage(options: rules)
        #expect(try folder.failure(validate, input)?.rule == .maxBytes)

        let item = folder.item(input)
        let context = StageContext(settings: RunSettings(workDirectory: folder.workDirectory, environment: [:]))
        _ = try video(600_000).run(item, context: context)
        #expect(throws: Never.self) { _ = try validate.run(item, context: context) }
    }
}

/// `audio: { fit }` on a minute of sine made here: kept at `bitrate` when it fits, lowered when not, `cannot_fit`
/// below 16 kbit/s per channel.
@Suite struct AudioFitTests {
    func audio(_ maxBytes: Int64) throws -> AudioStage {
        var options = AudioStage.Options()
        var fit = FitOptions()
        fit.maxBytes = ByteSize(bytes: maxBytes)
        options.fit = fit
        return try AudioStage(options: options)
    }

    func minute(_ folder: MediaFolder, _ name: String, codec: String = "-c:a pcm_s16le") throws -> String {
        let path = folder.file(name)
        // Noise, so AAC cannot spend less than its rate.
        try folder.ffmpeg("-f lavfi -i 'anoisesrc=duration=60:sample_rate=44100:amplitude=0.3' \(codec) '\(path)'")
        return path
    }

    func size(_ path: String) throws -> Int64 {
        try #require((try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value)
    }

    /// 64 kbit/s for 60 s is about 480 KB; a 300 KB limit lowers the rate to what fits.
    @Test func aRecordingOverTheLimitIsEncodedLower() throws {
        let folder = try MediaFolder("fit-audio")
        let input = try minute(folder, "visit.wav")
        let (item, fact) = try folder.run(try audio(300_000), input)
        #expect(try size(item.artifact) <= 300_000)
        let rate = try #require(fact["fit"]?["bit_rate"]?.doubleValue)
        #expect(rate < 40_000 && rate >= 16_000, "\(rate)")
        #expect(fact["fit"]?["action"]?.stringValue == "encoded")
        // Planned from the duration, not found by overshooting: one encode lands.
        guard case .array(let attempts)? = fact["fit"]?["attempts"] else {
            Issue.record("no attempts in \(String(describing: fact["fit"]))")
            return
        }
        #expect(attempts.count == 1, "\(attempts)")
    }

    @Test func aRecordingWithRoomKeepsItsRate() throws {
        let folder = try MediaFolder("fit-audio-room")
        let input = try minute(folder, "visit.wav")
        let (item, fact) = try folder.run(try audio(5_000_000), input)
        #expect(fact["fit"]?["bit_rate"] == .int(64000))
        #expect(try size(item.artifact) <= 5_000_000)
    }

    @Test func aCompliantRecordingThatFitsIsPassedThrough() throws {
        let folder = try MediaFolder("fit-audio-pass")
        let input = try minute(folder, "visit.m4a", codec: "-c:a aac -b:a 64k -ac 1 -movflags +faststart")
        let (item, fact) = try folder.run(try audio(5_000_000), input)
        #expect(fact["action"]?.stringValue == "passed_through")
        #expect(fact["fit"]?["action"]?.stringValue == "passed through")
        #expect(item.artifact == input)
    }

    /// The same compliant file over a tighter limit is no longer compliant: it is encoded lower.
    @Test func aCompliantRecordingOverTheLimitIsEncoded() throws {
        let folder = try MediaFolder("fit-audio-compliant")
        let input = try minute(folder, "visit.m4a", codec: "-c:a aac -b:a 64k -ac 1 -movflags +faststart")
        let (item, fact) = try folder.run(try audio(300_000), input)
        #expect(fact["action"]?.stringValue == "transcoded")
        #expect(try size(item.artifact) <= 300_000)
    }

    @Test func aLimitUnderTheFloorFailsCannotFit() throws {
        let folder = try MediaFolder("fit-audio-cannot")
        let input = try minute(folder, "visit.wav")
        let failure = try #require(try folder.failure(try audio(100_000), input))
        #expect("\(failure.stage).\(failure.rule)" == "audio.cannot_fit")
        #expect(failure.message.contains("60.0 s"))
    }
}
