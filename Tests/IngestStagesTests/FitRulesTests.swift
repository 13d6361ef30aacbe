import Foundation
import Testing

@testable import IngestCore
@testable import IngestMedia
@testable import IngestStages
@testable import IngestStagesTestSupport
@testable import IngestTestSupport

/// The fit rules `FitStageTests` leaves out: a fitted proxy beside the file, an output that overshoots every time
/// (never kept), and what `-v` and the report say of the choice, through the `ingest` binary.
@Suite struct FitRulesTests {
    let fit = FitStageTests()

    func fact(_ item: Item, _ name: String) -> JSONObject {
        guard case .object(let fact)? = item.facts[name] else { return [:] }
        return fact
    }

    /// `video: { output: proxy, fit }` beside a poster: the proxy lands under its limit, the file stays as
    /// recorded, and x264's pass 1 feeds the poster (the group decodes the video once per encode, no more).
    @Test func aFittedProxyLandsUnderItsLimitAndLeavesTheFileAsRecorded() throws {
        let folder = try MediaFolder("fit-proxy")
        let input = try fit.noisyClip(folder, "clip.mov", size: "640x360")
        let original = try Data(contentsOf: URL(fileURLWithPath: input))
        #expect(original.count > 600_000)
        let streams = try folder.probe(input).streams
        let frames = try #require(
            Int(streams.first { $0["codec_type"] as? String == "video" }?["nb_read_packets"] as? String ?? ""))
        let stages: [any FramePassStage] = [
            try PosterStage(options: PosterStage.Options()), try fit.video(600_000) { $0.output = "proxy" },
        ]
        let item = folder.item(input)
        let members = stages.enumerated().map { index, stage in
            var context = StageContext(settings: RunSettings(workDirectory: folder.workDirectory, environment: [:]))
            context.position = index
            return (stage: stage, context: context)
        }
        try FramePass.run(members, item: item)

        #expect(item.artifact == input)
        #expect(try Data(contentsOf: URL(fileURLWithPath: input)) == original)
        let proxy = try #require(ItemOutputs.description(of: "proxy", in: item))
        let path = try #require(proxy["work_path"]?.stringValue)
        let written = try fit.size(path)
        #expect(written <= 600_000)
        #expect(written > 450_000, "\(written) bytes: the budget was not used")
        #expect(proxy["size"]?.intValue == written)
        #expect(try folder.stream(path, "video")?["codec_name"] as? String == "h264")
        let video = fact(item, "video")
        #expect(video["output"]?.stringValue == "proxy")
        #expect(video["fit"]?["action"]?.stringValue == "encoded")
        #expect(video["fit"]?["step"]?.stringValue == "360p")
        guard case .array(let attempts)? = video["fit"]?["attempts"] else {
            Issue.record("no attempts in \(String(describing: video["fit"]))")
            return
        }
        // Pass 1 and each pass 2 decode the video once; the poster took its frame from pass 1.
        #expect(fact(item, "poster")["pass"]?["video_frames_decoded"]?.intValue == Int64(frames * (1 + attempts.count)))
        #expect(ItemOutputs.description(of: "poster", in: item)?["format"]?.stringValue == "jpeg")
    }

    /// Every encode forced four times over its rate overshoots: after three the file fails `video.cannot_fit`, and no
    /// output is kept — nothing oversize is ever sent.
    @Test func anOutputThatOvershootsEveryTimeIsNeverKept() throws {
        let folder = try MediaFolder("fit-never-oversize")
        let input = try fit.noisyClip(folder, "clip.mov", size: "640x360")
        var stage = try fit.video(600_000)
        stage.fitAttemptScales = [4, 4, 4]
        let failure = try #require(try folder.failure(stage, input))
        #expect("\(failure.stage).\(failure.rule)" == "video.cannot_fit")
        #expect(failure.message.contains("encoded 3 times and still"), "\(failure.message)")
        #expect(failure.message.contains("over the limit of 600000 bytes"), "\(failure.message)")
        #expect(folder.filesInWork().isEmpty)
    }

    /// `-v` names the step, the picture size and the bit rate chosen; the JSON report's `video.fit` holds the same.
    @Test func verboseLogAndReportNameTheStepAndBitRate() throws {
        let folder = try MediaFolder("fit-log")
        let input = try fit.noisyClip(folder, "clip.mov", size: "1280x720")
        let pipeline = folder.file("pipeline.yml")
        try """
        version: 1
        name: fit-log
        stages:
          - video: { preset: ultrafast, fit: { max_bytes: 600000 } }
          - upload: { method: local, dir: "\(folder.file("out"))" }
        """.write(toFile: pipeline, atomically: true, encoding: .utf8)
        let report = folder.file("report.jsonl")
        let result = try runCommand(
            TestPaths.ingest,
            ["run", pipeline, input, "--report", report, "-v", "--no-journal", "--work-dir", folder.workDirectory],
            environment: environmentWithoutProxies(), directory: folder.path)
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        let facts = try #require(reportObjects(report).compactMap { $0["facts"] as? [String: Any] }.first)
        let fitFact = try #require((facts["video"] as? [String: Any])?["fit"] as? [String: Any], "\(facts)")
        #expect(fitFact["step"] as? String == "540p")
        let rate = try #require(fitFact["video_bit_rate"] as? Int)
        let line = try #require(
            result.stderr.split(separator: "\n").first { $0.contains("video: fit to 600000 bytes") },
            "\(result.stderr)")
        #expect(line.contains("540p (960×540) at \(FitPlanner.formatRate(rate))"), "\(line)")
        #expect(line.contains("bits per pixel"), "\(line)")
    }
}
