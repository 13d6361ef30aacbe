import Foundation
import Testing

@testable import IngestCore
@testable import IngestCoreTestSupport
@testable import IngestNetwork
@testable import IngestStages
@testable import IngestTestSupport

/// Each validate rule, once passing and once failing, on real media made with the ffmpeg CLI.
@Suite struct ValidateStageTests {
    /// Media made once for the suite: a 2 s 320×240 H.264/AAC .mov, a 1 s mono AAC .m4a, a JPEG, and a .mov that is
    /// really that JPEG.
    final class Media: @unchecked Sendable {
        static let shared = Media()
        let directory: URL
        let mov: String
        let m4a: String
        let jpeg: String
        let jpegNamedMov: String
        let silentMov: String

        init() {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("ingest-validate-\(getpid())")
            try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            mov = directory.appendingPathComponent("clip.mov").path
            m4a = directory.appendingPathComponent("voice.m4a").path
            jpeg = directory.appendingPathComponent("photo.jpg").path
            jpegNamedMov = directory.appendingPathComponent("photo.mov").path
            silentMov = directory.appendingPathComponent("silent.mov").path
            let ffmpeg = ["-hide_banner", "-loglevel", "error", "-y"]
            Media.run(
                "ffmpeg",
                ffmpeg + [
                    "-f", "lavfi", "-i", "testsrc=size=320x240:rate=25:duration=2", "-f", "lavfi", "-i",
                    "sine=frequency=440:duration=2", "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac",
                    "-shortest", mov,
                ])
            Media.run(
                "ffmpeg",
                ffmpeg + [
                    "-f", "lavfi", "-i", "testsrc=size=320x240:rate=25:duration=1", "-c:v", "libx264", "-preset",
                    "ultrafast", silentMov,
                ])
            Media.run(
                "ffmpeg",
                ffmpeg + [
                    "-f", "lavfi", "-i", "sine=frequency=440:duration=1", "-ac", "1", "-ar", "44100", "-c:a", "aac",
                    m4a,
                ])
            Media.run("ffmpeg", ffmpeg + ["-f", "lavfi", "-i", "testsrc=size=640x480", "-frames:v", "1", jpeg])
            try? FileManager.default.copyItem(atPath: jpeg, toPath: jpegNamedMov)
        }

        static func run(_ tool: String, _ arguments: [String]) { _ = try? runTool(tool, arguments) }
    }

    var media: Media { Media.shared }

    /// Runs validate with `configure`d options on `path`; returns the rules that failed (empty when it passed).
    func failedRules(_ path: String, _ configure: (inout ValidateStage.Options) -> Void) throws -> [String] {
        try failures(path, configure).map(\.rule.rawValue)
    }

    func failures(_ path: String, _ configure: (inout ValidateStage.Options) -> Void) throws -> [RuleFailure] {
        var options = ValidateStage.Options()
        configure(&options)
        let stage = try ValidateStage(options: options)
        let item = Item.onDisk(path)
        do {
            #expect(try stage.run(item, context: StageContext(settings: RunSettings())) == .proceed)
            return []
        } catch let failed as ItemFailed {
            return failed.failures
        }
    }

    @Test func extensions() throws {
        #expect(try failedRules(media.mov) { $0.extensions = ["mov", "MP4"] } == [])
        #expect(try failedRules(media.mov) { $0.extensions = [".MOV"] } == [])
        let failed = try failures(media.m4a) { $0.extensions = ["mov"] }
        #expect(failed.map(\.rule.rawValue) == ["extensions"])
        #expect(failed.first?.actual == ".m4a")
        #expect(failed.first?.expected == ".mov")
    }

    @Test func contentSniffing() throws {
        #expect(try failedRules(media.mov) { _ in } == [])
        let failed = try failures(media.jpegNamedMov) { _ in }
        #expect(failed.map(\.rule.rawValue) == ["content"])
        #expect(failed.first?.message == "content is JPEG, extension says .mov")
        #expect(try failedRules(media.jpegNamedMov) { $0.sniff = false } == [])
    }

    @Test func sizes() throws {
        let size = try #require(FileManager.default.attributesOfItem(atPath: media.m4a)[.size] as? NSNumber).int64Value
        #expect(
            try failedRules(media.m4a) {
                $0.minBytes = ByteSize(bytes: size)
                $0.maxBytes = ByteSize(bytes: size)
            } == [])
        #expect(try failedRules(media.m4a) { $0.minBytes = ByteSize(bytes: size + 1) } == ["min_bytes"])
        let failed = try failures(media.m4a) { $0.maxBytes = ByteSize(bytes: size - 1) }
        #expect(failed.map(\.rule.rawValue) == ["max_bytes"])
        #expect(failed.first?.actual?.hasPrefix("\(size) bytes") == true)
    }

    @Test func emptyFileFailsWithoutBeingOpened() throws {
        let empty = media.directory.appendingPathComponent("empty.mov").path
        #expect(FileManager.default.createFile(atPath: empty, contents: Data()))
        let failed = try failures(empty) {
            $0.duration = .init()
            $0.duration?.max = DurationValue(seconds: 10)
        }
        #expect(failed.map(\.rule.rawValue) == ["min_bytes"])
        #expect(failed.first?.message == "file is empty")
    }

    @Test func duration() throws {
        #expect(
            try failedRules(media.mov) {
                $0.duration = .init()
                $0.duration?.min = DurationValue(seconds: 1)
                $0.duration?.max = DurationValue(seconds: 3)
            } == [])
        #expect(
            try failedRules(media.mov) {
                $0.duration = .init()
                $0.duration?.min = DurationValue(seconds: 5)
            } == ["duration.min"])
        let failed = try failures(media.mov) {
            $0.duration = .init()
            $0.duration?.max = DurationValue(seconds: 1)
        }
        #expect(failed.map(\.rule.rawValue) == ["duration.max"])
        #expect(failed.first?.expected == "≤ 1s")
    }

    @Test func containers() throws {
        #expect(try failedRules(media.mov) { $0.containers = ["mov"] } == [])
        #expect(try failedRules(media.m4a) { $0.containers = ["mp4"] } == [])
        #expect(try failedRules(media.jpeg) { $0.containers = ["jpeg"] } == [])
        #expect(try failedRules(media.mov) { $0.containers = ["matroska", "wav"] } == ["containers"])
    }

    @Test func codecs() throws {
        #expect(
            try failedRules(media.mov) {
                $0.videoCodecs = ["h264"]
                $0.audioCodecs = ["aac"]
            } == [])
        let failed = try failures(media.mov) {
            $0.videoCodecs = ["hevc"]
            $0.audioCodecs = ["mp3", "opus"]
        }
        #expect(failed.map(\.rule.rawValue) == ["video_codecs", "audio_codecs"])
        #expect(failed.first?.actual == "h264")
    }

    @Test func dimensions() throws {
        #expect(
            try failedRules(media.mov) {
                $0.maxWidth = 320
                $0.maxHeight = 240
                $0.maxPixels = 320 * 240
            } == [])
        #expect(try failedRules(media.mov) { $0.maxWidth = 319 } == ["max_width"])
        #expect(try failedRules(media.mov) { $0.maxHeight = 200 } == ["max_height"])
        #expect(try failedRules(media.jpeg) { $0.maxPixels = 640 * 480 - 1 } == ["max_pixels"])
        // An audio file has no picture: dimension limits do not apply.
        #expect(try failedRules(media.m4a) { $0.maxWidth = 10 } == [])
    }

    @Test func requiredStreams() throws {
        #expect(try failedRules(media.mov) { $0.require = [.audio, .video] } == [])
        #expect(try failedRules(media.silentMov) { $0.require = [.audio] } == ["require"])
        #expect(try failedRules(media.m4a) { $0.require = [.video] } == ["require"])
        #expect(try failedRules(media.mov) { $0.require = [.location] } == ["require"])
    }

    @Test func everyBrokenRuleIsReported() throws {
        let rules = try failedRules(media.mov) {
            $0.extensions = ["m4a"]
            $0.maxBytes = ByteSize(bytes: 10)
            $0.videoCodecs = ["vp9"]
        }
        #expect(rules == ["extensions", "max_bytes", "video_codecs"])
    }

    @Test func truncatedContainerFailsAsCorrupt() throws {
        let truncated = media.directory.appendingPathComponent("truncated.mov").path
        let handle = try #require(FileHandle(forReadingAtPath: media.mov))
        let head = try handle.read(upToCount: 2000) ?? Data()
        try handle.close()
        #expect(FileManager.default.createFile(atPath: truncated, contents: head))
        let failed = try failures(truncated) {
            $0.duration = .init()
            $0.duration?.max = DurationValue(seconds: 10)
        }
        #expect(failed.count == 1)
        #expect(failed.first?.stage == "validate")
        #expect(failed.first.map { ["corrupt", "duration"].contains($0.rule.rawValue) } == true)
    }

    @Test func optionCrossChecks() throws {
        let node = ConfigNode(.mapping([]), at: SourceLocation(file: "p.yml", line: 3, column: 5))
        var options = ValidateStage.Options()
        options.minBytes = ByteSize(bytes: 10)
        options.maxBytes = ByteSize(bytes: 5)
        #expect(throws: PipelineFileError.self) { try options.validate(at: node) }
    }
}
