import Foundation
import Testing

@testable import IngestCore
@testable import IngestNetwork
@testable import IngestStages
@testable import IngestStagesTestSupport
@testable import IngestTestSupport

/// The `audio` stage against real files made here with the ffmpeg CLI; ffprobe reads the results back.
@Suite struct AudioStageTests {
    func stage(_ configure: (inout AudioStage.Options) -> Void = { _ in }) throws -> AudioStage {
        var options = AudioStage.Options()
        configure(&options)
        return try AudioStage(options: options)
    }

    /// Checks what the seed backend expects of every output: AAC mono 44.1 kHz in an m4a with moov first.
    func expectCompliant(_ folder: MediaFolder, _ output: String, duration expected: Double) throws {
        let audio = try #require(try folder.stream(output, "audio"))
        #expect(audio["codec_name"] as? String == "aac")
        #expect(audio["channels"] as? Int == 1)
        #expect(audio["sample_rate"] as? String == "44100")
        let bitRate = try #require(Double(audio["bit_rate"] as? String ?? ""))
        #expect(bitRate > 48_000 && bitRate < 80_000, "bit rate \(bitRate)")
        #expect(abs(try folder.duration(output) - expected) <= 0.025)
        #expect(try folder.moovBeforeMdat(output))
        let format = try folder.probe(output).format
        #expect((format["tags"] as? [String: Any])?["major_brand"] as? String == "M4A ")
    }

    @Test(arguments: [
        ("wav", "-c:a pcm_s16le -ar 48000 -ac 2"),
        ("mp3", "-c:a libmp3lame -ar 48000 -ac 2 -b:a 128k"),
        ("flac", "-c:a flac -ar 96000 -ac 2"),
        ("mov", "-c:a pcm_s24le -ar 22050 -ac 1"),
        ("m4a", "-c:a aac -ar 48000 -ac 2 -b:a 192k"),
    ])
    func transcodesToMonoAAC(_ format: String, _ codec: String) throws {
        let folder = try MediaFolder("audio")
        let input = folder.file("in.\(format)")
        try folder.ffmpeg("-f lavfi -i 'sine=frequency=440:duration=3.5' \(codec) '\(input)'")
        let (item, fact) = try folder.run(try stage(), input)
        let output = folder.workDirectory + "/audio/0/in.\(format).m4a"
        #expect(item.artifact == output)
        #expect(fact["action"]?.stringValue == "transcoded")
        #expect(fact["path"]?.stringValue == output)
        #expect(fact["after"]?["audio_codec"]?.stringValue == "aac")
        #expect(fact["before"]?["bytes"]?.doubleValue == Double(item.size))
        #expect(fact["decode_errors_skipped"]?.doubleValue == 0)
        try expectCompliant(folder, output, duration: try folder.duration(input))
        #expect(folder.filesInWork() == ["audio/0/in.\(format).m4a"])
    }

    @Test func audioTrackOfAMovieAndSettings() throws {
        let folder = try MediaFolder("audio-movie")
        let input = folder.file("clip.mov")
        try folder.ffmpeg(
            "-f lavfi -i testsrc2=size=160x120:rate=25 -f lavfi -i 'sine=frequency=300:sample_rate=48000' -t 2 "
                + "-c:v libx264 -preset ultrafast -c:a aac -ac 2 '\(input)'")
        let (item, fact) = try folder.run(
            try stage {
                $0.channels = 2
                $0.sampleRate = 32000
                $0.bitrate = BitRate(bitsPerSecond: 96000)
            }, input)
        let audio = try #require(try folder.stream(item.artifact, "audio"))
        #expect(try folder.stream(item.artifact, "video") == nil)
        #expect(audio["channels"] as? Int == 2)
        #expect(audio["sample_rate"] as? String == "32000")
        #expect(abs(try folder.duration(item.artifact) - 2) <= 0.025)
        #expect(fact["bitrate"]?.doubleValue == 96000)
    }

    @Test func compliantFileIsPassedThroughUntouched() throws {
        let folder = try MediaFolder("audio-pass")
        let input = folder.file("visit.m4a")
        try folder.ffmpeg(
            "-f lavfi -i 'sine=frequency=500:sample_rate=44100:duration=2' -c:a aac -b:a 64k -ac 1 "
                + "-movflags +faststart '\(input)'")
        try folder.sh("cp '\(input)' '\(folder.file("copy.m4a"))'")
        let (item, fact) = try folder.run(try stage(), input)
        #expect(fact["action"]?.stringValue == "passed_through")
        #expect(item.artifact == input)
        #expect(FileManager.default.contentsEqual(atPath: input, andPath: folder.file("copy.m4a")))
        #expect(folder.filesInWork().isEmpty)
    }

    @Test func compliantButMoovAtTheEndIsRemuxedNotReencoded() throws {
        let folder = try MediaFolder("audio-remux")
        let input = folder.file("visit.m4a")
        try folder.ffmpeg(
            "-f lavfi -i 'sine=frequency=500:sample_rate=44100:duration=2' -c:a aac -b:a 64k -ac 1 '\(input)'")
        #expect(try !folder.moovBeforeMdat(input))
        let (item, fact) = try folder.run(try stage(), input)
        #expect(fact["action"]?.stringValue == "remuxed")
        #expect(try folder.moovBeforeMdat(item.artifact))
        let before = try #require(try folder.stream(input, "audio"))
        let after = try #require(try folder.stream(item.artifact, "audio"))
        #expect(after["nb_read_packets"] as? String == before["nb_read_packets"] as? String)
        #expect(after["bit_rate"] as? String == before["bit_rate"] as? String)
        #expect(abs(try folder.duration(item.artifact) - (try folder.duration(input))) <= 0.001)
    }

    @Test func creationTimeIsKept() throws {
        let folder = try MediaFolder("audio-time")
        let input = folder.file("visit.m4a")
        try folder.ffmpeg(
            "-f lavfi -i 'sine=duration=1' -c:a alac -metadata creation_time=2024-12-19T14:30:22.000000Z '\(input)'")
        let (item, fact) = try folder.run(try stage(), input)
        #expect(fact["action"]?.stringValue == "transcoded")
        let tags = try folder.probe(item.artifact).format["tags"] as? [String: Any]
        #expect(tags?["creation_time"] as? String == "2024-12-19T14:30:22.000000Z")
    }

    /// Through the CLI: each bad file fails with its own message, the good one still passes, nothing is left over.
    @Test func badFilesFailOneByOneInABatch() throws {
        let folder = try MediaFolder("audio-batch")
        try folder.sh("mkdir -p '\(folder.file("in"))'")
        try folder.ffmpeg("-f lavfi -i 'sine=duration=2' -c:a libmp3lame in/good.mp3")
        try folder.ffmpeg("-f lavfi -i anullsrc=r=44100:cl=mono -t 0 in/empty.wav")
        try folder.ffmpeg("-f lavfi -i testsrc2=size=160x120 -t 1 -c:v libx264 -preset ultrafast in/silent.mp4")
        let pipeline = folder.file("p.yml")
        try folder.sh("printf 'version: 1\\nname: t\\nstages:\\n  - audio: {}\\n' > '\(pipeline)'")
        let result = try runCommand(
            TestPaths.ingest, ["run", pipeline, folder.file("in"), "--work-dir", folder.workDirectory])
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("audio.empty:"), "\(result.stdout)")
        #expect(result.stdout.contains("audio.no_audio:"), "\(result.stdout)")
        #expect(result.stdout.hasSuffix("1 passed, 2 failed, 0 skipped\n"), "\(result.stdout)")
        #expect(!folder.filesInWork().contains { $0.contains(".tmp") }, "\(folder.filesInWork())")
    }

    @Test func noAudioStreamFails() throws {
        let folder = try MediaFolder("audio-none")
        let input = folder.file("silent.mp4")
        try folder.ffmpeg("-f lavfi -i testsrc2=size=160x120 -t 1 -c:v libx264 -preset ultrafast '\(input)'")
        let failure = try #require(try folder.failure(try stage(), input))
        #expect(failure.rule.rawValue == "no_audio")
        #expect(folder.filesInWork().isEmpty)
    }

    @Test func zeroDurationFails() throws {
        let folder = try MediaFolder("audio-zero")
        let input = folder.file("empty.wav")
        try folder.ffmpeg("-f lavfi -i anullsrc=r=44100:cl=mono -t 0 '\(input)'")
        let failure = try #require(try folder.failure(try stage(), input))
        #expect(failure.rule.rawValue == "empty", "\(failure)")
        #expect(folder.filesInWork().isEmpty)
    }

    @Test func unsupportedCodecIsNamed() throws {
        let folder = try MediaFolder("audio-codec")
        let input = folder.file("odd.mov")
        try folder.ffmpeg("-f lavfi -i 'sine=duration=1' -c:a pcm_s16le '\(input)'")
        try folder.patchSampleEntry(input, "sowt", "zzzz")
        let failure = try #require(try folder.failure(try stage(), input))
        #expect(failure.rule.rawValue == "unsupported")
        #expect(failure.message.contains("zzzz"), "\(failure.message)")
        #expect(folder.filesInWork().isEmpty)
    }

    @Test func corruptAudioFailsOrSkipsAsConfigured() throws {
        let folder = try MediaFolder("audio-corrupt")
        let input = folder.file("broken.m4a")
        try folder.ffmpeg(
            "-f lavfi -i 'sine=frequency=500:sample_rate=48000:duration=6' -c:a aac -b:a 128k -ac 2 "
                + "-movflags +faststart '\(input)'")
        try folder.corrupt(input, at: 0.5, count: 4000)
        let original = try Data(contentsOf: URL(fileURLWithPath: input))
        let failure = try #require(try folder.failure(try stage(), input))
        #expect(failure.rule.rawValue == "corrupt")
        #expect(failure.message.contains("aac decoder"), "\(failure.message)")
        #expect(folder.filesInWork().isEmpty)
        #expect(try Data(contentsOf: URL(fileURLWithPath: input)) == original)

        let (item, fact) = try folder.run(try stage { $0.onDecodeError = .skip }, input)
        #expect((fact["decode_errors_skipped"]?.doubleValue ?? 0) > 0)
        #expect(try folder.stream(item.artifact, "audio")?["codec_name"] as? String == "aac")
    }
}
