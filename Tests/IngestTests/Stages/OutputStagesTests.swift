import Foundation
import Testing

@testable import Ingest
@testable import IngestCore
@testable import IngestStages

/// Named outputs beside the file (issue 31 §2): `poster`, `thumbnails` and `video` with `output:`, on clips made
/// here with the ffmpeg CLI; ffprobe is the oracle.
@Suite struct OutputStagesTests {
    func context(_ folder: MediaFolder) -> StageContext {
        StageContext(settings: RunSettings(workDirectory: folder.workDirectory, environment: [:]))
    }

    func fact(_ item: Item, _ name: String) -> [String: JSONValue] {
        guard case .object(let fact)? = item.facts[name] else { return [:] }
        return Dictionary(uniqueKeysWithValues: fact.pairs.map { ($0.0, $0.1) })
    }

    /// 1 s black, 1 s of a heavily blurred picture, then 2 s sharp: 25 fps, 320×240, with a sine track.
    func blackBlurredSharp(_ folder: MediaFolder) throws -> String {
        try folder.ffmpeg(
            "-f lavfi -i color=black:size=320x240:rate=25:duration=1 "
                + "-f lavfi -i testsrc=size=320x240:rate=25:duration=1 "
                + "-f lavfi -i testsrc=size=320x240:rate=25:duration=2 -f lavfi -i sine=sample_rate=48000:duration=4 "
                + "-filter_complex '[1]gblur=sigma=25[b];[0][b][2]concat=n=3:v=1:a=0[v]' -map '[v]' -map 3 "
                + "-c:v mpeg4 -q:v 3 -c:a aac clip.mov")
        return folder.file("clip.mov")
    }

    @Test func posterSkipsBlackAndBlurredFrames() throws {
        let folder = try MediaFolder("poster-auto")
        let input = try blackBlurredSharp(folder)
        let item = folder.item(input)
        _ = try PosterStage(options: PosterStage.Options()).run(item, context: context(folder))
        let time = try #require(fact(item, "poster")["time"]?.doubleValue)
        #expect(time >= 2 && time < 2.5, "poster at \(time) s")
        #expect(fact(item, "poster")["chosen"]?.stringValue == "first clear frame")
        // The file stays the main output; the poster sits beside it.
        #expect(item.artifact == input)
        let poster = try #require(ItemOutputs.description(of: "poster", in: item))
        let path = try #require(poster["work_path"]?.stringValue)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int64)
        #expect(poster["size"]?.intValue == size)
        #expect(poster["path"]?.stringValue == "clip.poster.jpg")
        let stream = try #require(try folder.stream(path, "video"))
        #expect(stream["codec_name"] as? String == "mjpeg")
        #expect(stream["width"] as? Int == 320)
    }

    @Test func posterAtATimeTakesThatFrame() throws {
        let folder = try MediaFolder("poster-at")
        let input = try blackBlurredSharp(folder)
        var options = PosterStage.Options()
        options.at = DurationValue(seconds: 0.48)
        options.maxSide = 160
        let item = folder.item(input)
        _ = try PosterStage(options: options).run(item, context: context(folder))
        // Frame 12 of 25 fps: the first at or after 0.48 s.
        #expect(abs((fact(item, "poster")["time"]?.doubleValue ?? 0) - 0.48) < 0.001)
        #expect(ItemOutputs.description(of: "poster", in: item)?["width"]?.intValue == 160)
    }

    @Test func sheetLaysOutCountFramesInAGrid() throws {
        let folder = try MediaFolder("sheet")
        let input = try blackBlurredSharp(folder)
        var options = ThumbnailsStage.Options()
        options.count = 6
        let item = folder.item(input)
        _ = try ThumbnailsStage(options: options).run(item, context: context(folder))
        let sheet = try #require(ItemOutputs.description(of: "sheet", in: item))
        #expect(sheet["tiles"]?.intValue == 6)
        #expect(sheet["columns"]?.intValue == 3)
        // 3 × 2 tiles of 320×240 with 4-pixel gaps.
        let path = try #require(sheet["work_path"]?.stringValue)
        let stream = try #require(try folder.stream(path, "video"))
        #expect(stream["width"] as? Int == 3 * 320 + 4 * 4)
        #expect(stream["height"] as? Int == 2 * 240 + 3 * 4)
    }

    /// Poster, sheet and proxy from one pass: every stage's fact shows the group's demux and decode work (summed over
    /// every pass it made), which is the file's packets once and the video's frames once (not two or three times).
    @Test func oneDemuxAndDecodeServesEveryOutput() throws {
        let folder = try MediaFolder("one-pass")
        let input = try blackBlurredSharp(folder)
        let streams = try folder.probe(input).streams
        let packets = streams.compactMap { Int($0["nb_read_packets"] as? String ?? "") }.reduce(0, +)
        let frames = Int(streams.first { $0["codec_type"] as? String == "video" }?["nb_read_packets"] as? String ?? "")
        var video = VideoStage.Options()
        video.output = "proxy"
        video.maxWidth = 160
        video.mode = .transcode
        let stages: [any FramePassStage] = [
            try PosterStage(options: PosterStage.Options()), try ThumbnailsStage(options: ThumbnailsStage.Options()),
            try VideoStage(options: video),
        ]
        let item = folder.item(input)
        let members = stages.enumerated().map { index, stage in
            var context = context(folder)
            context.position = index
            return (stage: stage, context: context)
        }
        try FramePass.run(members, item: item)
        for name in ["poster", "thumbnails", "video"] {
            let pass = fact(item, name)["pass"]
            #expect(pass?["packets_read"]?.intValue == Int64(packets), "\(name): \(String(describing: pass))")
            #expect(pass?["video_frames_decoded"]?.intValue == frames.map(Int64.init), "\(name)")
        }
        #expect(item.artifact == input)
        let proxy = try #require(ItemOutputs.description(of: "proxy", in: item)?["work_path"]?.stringValue)
        #expect(try folder.stream(proxy, "video")?["width"] as? Int == 160)
        #expect(try folder.stream(proxy, "audio")?["codec_name"] as? String == "aac")
        #expect(ItemOutputs.description(of: "sheet", in: item)?["tiles"]?.intValue == 12)
    }

    /// An output whose uploads an earlier run finished is not made again.
    @Test func anOutputDeliveredEarlierIsNotMadeAgain() throws {
        let folder = try MediaFolder("delivered")
        let input = try blackBlurredSharp(folder)
        var context = context(folder)
        context.deliveredOutputs = ["poster": ["size": 1234, "name": "clip.poster.jpg"]]
        let item = folder.item(input)
        _ = try PosterStage(options: PosterStage.Options()).run(item, context: context)
        let poster = try #require(ItemOutputs.description(of: "poster", in: item))
        #expect(poster["delivered_earlier"] == .bool(true))
        #expect(poster["size"]?.intValue == 1234)
        #expect(folder.filesInWork().isEmpty)
    }

    /// `audio` and `jpeg` with `output:` add an output and leave the file as the main one.
    @Test func audioAndJpegWithOutputAddInsteadOfReplacing() throws {
        let folder = try MediaFolder("media-outputs")
        let clip = try blackBlurredSharp(folder)
        var audio = AudioStage.Options()
        audio.output = "voice"
        let item = folder.item(clip)
        _ = try AudioStage(options: audio).run(item, context: context(folder))
        #expect(item.artifact == clip)
        let voice = try #require(ItemOutputs.description(of: "voice", in: item))
        #expect(voice["ext"]?.stringValue == "m4a")
        let voicePath = try #require(voice["work_path"]?.stringValue)
        #expect(try folder.stream(voicePath, "audio")?["codec_name"] as? String == "aac")

        try folder.ffmpeg("-f lavfi -i testsrc=size=640x480 -frames:v 1 photo.png")
        var jpeg = JpegStage.Options()
        jpeg.output = "preview"
        jpeg.maxDimension = 100
        let photo = folder.item(folder.file("photo.png"))
        _ = try JpegStage(options: jpeg).run(photo, context: context(folder))
        #expect(photo.artifact == folder.file("photo.png"))
        let preview = try #require(ItemOutputs.description(of: "preview", in: photo))
        #expect(preview["path"]?.stringValue == "photo.preview.jpg")
        #expect(try folder.stream(try #require(preview["work_path"]?.stringValue), "video")?["width"] as? Int == 100)
    }
}
