import Foundation
import Testing

@testable import IngestConfig
@testable import IngestCore
@testable import IngestRun
@testable import IngestStages
@testable import IngestStagesTestSupport
@testable import IngestTestSupport

/// Work files (transcoded artifacts) belong to one input each: the runner removes a finished file's work file, so
/// two inputs sharing one path lost each other's upload, depending on which finished first.
@Suite struct WorkPathTests {
    let work = "/tmp/w"

    func path(_ relativePath: String, root: String = "in", index: Int = 0, stage: String = "video", ext: String = "mp4")
        -> String
    {
        let item = Item(
            path: root + "/" + relativePath, relativePath: relativePath, size: 1, root: root, rootIndex: index)
        return WorkFolder.outputPath(for: item, workDirectory: work, stage: stage, fileExtension: ext)
    }

    @Test func pathsAreReadableAndDistinctPerItem() throws {
        // One stem in two containers, side by side.
        #expect(path("day1/clip.mov") == "/tmp/w/video/0-in/day1/clip.mov.mp4")
        #expect(path("day1/clip.mp4") == "/tmp/w/video/0-in/day1/clip.mp4.mp4")
        // One relative path under two roots, and one root given twice.
        #expect(path("x.jpg", root: "a", index: 0, stage: "jpeg", ext: "jpg") == "/tmp/w/jpeg/0-a/x.jpg.jpg")
        #expect(path("x.jpg", root: "b/", index: 1, stage: "jpeg", ext: "jpg") == "/tmp/w/jpeg/1-b/x.jpg.jpg")
        #expect(path("x.jpg", root: "a", index: 1, stage: "jpeg", ext: "jpg") == "/tmp/w/jpeg/1-a/x.jpg.jpg")
        // A root without a name of its own: the current folder's name, or the number alone.
        let here = (FileManager.default.currentDirectoryPath as NSString).lastPathComponent
        #expect(path("x.wav", root: ".", stage: "audio", ext: "m4a") == "/tmp/w/audio/0-\(here)/x.wav.m4a")
        #expect(path("x.wav", root: "/", stage: "audio", ext: "m4a") == "/tmp/w/audio/0/x.wav.m4a")
        #expect(path("x.wav", root: "", index: 3, stage: "audio", ext: "m4a") == "/tmp/w/audio/3/x.wav.m4a")
    }

    @Test func pathsStayInsideTheWorkFolderAndWithinNameLimits() throws {
        let escaping = path("../../etc/passwd")
        #expect(WorkFolder.contains(escaping, folder: work + "/video"), "\(escaping)")
        #expect(!escaping.contains(".."))
        // Names of 255 bytes (the file system allows 255) get a new extension without growing past the limit, and
        // two that start alike stay apart.
        let first = path(String(repeating: "é", count: 125) + "a.mov")
        let second = path(String(repeating: "é", count: 125) + "b.mov")
        #expect(first != second)
        for long in [first, second] {
            let name = (long as NSString).lastPathComponent
            #expect(name.utf8.count <= 255, "\(name.utf8.count) bytes")
            #expect(name.hasSuffix(".mp4") && name.hasPrefix("éé"))
        }
        let longRoot = String(repeating: "r", count: 300)
        let component = try #require(path("x.mov", root: longRoot, index: 2).split(separator: "/").dropLast().last)
        #expect(component == "2-" + String(repeating: "r", count: 64))
    }

    @Test func walkerNumbersRootsInItsOrder() throws {
        let folder = try TemporaryFolder("work-roots")
        defer { folder.remove() }
        try folder.file("a/x.jpg")
        try folder.file("b/x.jpg")
        let entries = Array(
            InputWalker(paths: [folder.path + "/b", folder.path + "/a", folder.path + "/a"], spec: InputSpec()))
        #expect(entries.map(\.rootIndex) == [0, 1, 2])
        #expect(entries.map(\.root) == [folder.path + "/a", folder.path + "/a", folder.path + "/b"])
    }

    /// Runs `ingest run` in `folder` (journal and work folder in it, the work folder at `folder.workDirectory` so
    /// `filesInWork()` sees it); returns the exit and the JSON Lines report.
    func run(_ pipeline: String, _ inputs: [String], in folder: MediaFolder) throws -> (CommandResult, [[String: Any]])
    {
        let file = folder.file("pipeline.yml")
        try pipeline.write(toFile: file, atomically: true, encoding: .utf8)
        let report = folder.file("report.jsonl")
        let result = try runCommand(
            TestPaths.ingest, ["run", file] + inputs + ["--report", report, "-q", "--work-dir", folder.workDirectory],
            environment: environmentWithoutProxies(), directory: folder.path)
        return (result, reportObjects(report))
    }

    /// Two files transcode at once, then ask the fixture backend for a ticket; the first ticket is answered two
    /// seconds late, so the other file is uploaded and finished (its work file removed) while the first still
    /// waits to upload its own. With a shared work path the waiting file's upload found nothing, or the other's
    /// bytes.
    func clashPipeline(_ backend: FixtureBackend, transcode: String, key: String) -> String {
        """
        version: 1
        name: work-paths
        concurrency: 2
        stages:
          - \(transcode)
          - request:
              url: \(backend.base)/api/upload-url
              json: { user_id: u1, content_type: video/mov }
              as: ticket
          - upload: { method: local, dir: dest, key: "\(key)" }

        """
    }

    static let slowFirstTicket =
        #"[{"method": "POST", "path": "/api/upload-url", "action": "delay", "seconds": 2, "times": 1}]"#

    @Test func videoOfOneNameInTwoContainersIsUploadedWhole() throws {
        let backend = try FixtureBackend(faults: Self.slowFirstTicket)
        defer { backend.stop() }
        let folder = try MediaFolder("work-video")
        try FileManager.default.createDirectory(atPath: folder.file("in"), withIntermediateDirectories: true)
        // Told apart after the transcode by their title (carried over) and their frame count.
        for (name, seconds) in [("clip.mov", 1), ("clip.mp4", 2)] {
            try folder.ffmpeg(
                "-f lavfi -i testsrc2=size=160x120:rate=25 -t \(seconds) -c:v mpeg4 -metadata title=\(name) in/\(name)")
        }
        let (result, reports) = try run(
            clashPipeline(backend, transcode: "video: { mode: transcode }", key: "{{file.name}}.mp4"),
            [folder.file("in")], in: folder)
        #expect(result.status == 0, "\(result.stderr) \(reports)")
        #expect(reports.map { $0["status"] as? String } == ["passed", "passed"], "\(reports)")
        for (name, frames) in [("clip.mov", "25"), ("clip.mp4", "50")] {
            let uploaded = folder.file("dest/\(name).mp4")
            let tags = try folder.probe(uploaded).format["tags"] as? [String: Any]
            #expect(tags?["title"] as? String == name)
            let video = try #require(try folder.stream(uploaded, "video"))
            #expect(video["codec_name"] as? String == "h264")
            #expect(video["nb_read_packets"] as? String == frames)
        }
        #expect(try backend.counts("tickets") == ["/api/upload-url": 2])
        #expect(folder.filesInWork().isEmpty)
        let workFiles = reports.compactMap { ($0["facts"] as? [String: Any])?["video"] as? [String: Any] }
            .compactMap { $0["path"] as? String }
        #expect(workFiles.sorted().map { ($0 as NSString).lastPathComponent } == ["clip.mov.mp4", "clip.mp4.mp4"])
    }

    @Test func audioOfOneNameInTwoFormatsIsUploadedWhole() throws {
        let backend = try FixtureBackend(faults: Self.slowFirstTicket)
        defer { backend.stop() }
        let folder = try MediaFolder("work-audio")
        try FileManager.default.createDirectory(atPath: folder.file("in"), withIntermediateDirectories: true)
        // Told apart after the transcode by their length.
        for (name, seconds) in [("voice.wav", 1), ("voice.mp3", 3)] {
            try folder.ffmpeg("-f lavfi -i 'sine=frequency=440:duration=\(seconds)' in/\(name)")
        }
        let (result, reports) = try run(
            clashPipeline(backend, transcode: "audio: {}", key: "{{file.name}}.m4a"), [folder.file("in")], in: folder)
        #expect(result.status == 0, "\(result.stderr) \(reports)")
        #expect(reports.map { $0["status"] as? String } == ["passed", "passed"], "\(reports)")
        for (name, seconds) in [("voice.wav", 1.0), ("voice.mp3", 3.0)] {
            let uploaded = folder.file("dest/\(name).m4a")
            #expect(try folder.stream(uploaded, "audio")?["codec_name"] as? String == "aac")
            #expect(abs(try folder.duration(uploaded) - seconds) < 0.2, "\(name)")
        }
        #expect(folder.filesInWork().isEmpty)
    }

    @Test func photoOfOnePathUnderTwoRootsIsUploadedWhole() throws {
        let backend = try FixtureBackend(faults: Self.slowFirstTicket)
        defer { backend.stop() }
        let folder = try MediaFolder("work-jpeg")
        for (root, size) in [("a", "320x240"), ("b", "200x100")] {
            try FileManager.default.createDirectory(atPath: folder.file(root), withIntermediateDirectories: true)
            try folder.ffmpeg("-f lavfi -i testsrc2=size=\(size) -frames:v 1 \(root)/x.jpg")
        }
        let (result, reports) = try run(
            clashPipeline(backend, transcode: "jpeg: { quality: 80 }", key: "{{dir.name}}/{{file.name}}"),
            [folder.file("a"), folder.file("b")], in: folder)
        #expect(result.status == 0, "\(result.stderr) \(reports)")
        #expect(reports.map { $0["status"] as? String } == ["passed", "passed"], "\(reports)")
        for (root, width, height) in [("a", 320, 240), ("b", 200, 100)] {
            let video = try #require(try folder.stream(folder.file("dest/\(root)/x.jpg"), "video"))
            #expect(video["width"] as? Int == width)
            #expect(video["height"] as? Int == height)
        }
        #expect(folder.filesInWork().isEmpty)
    }

    /// One input made by `ffmpeg INPUT` in `in/`, run through `first`, `second` and a local upload into `dest/`;
    /// the file must pass. Returns the folder and the file's report.
    func runTwoStages(
        _ name: String, input: String, _ first: String, _ second: String
    ) throws -> (MediaFolder, [String: Any]) {
        let folder = try MediaFolder("work-" + name)
        try FileManager.default.createDirectory(atPath: folder.file("in"), withIntermediateDirectories: true)
        try folder.ffmpeg(input)
        let pipeline = """
            version: 1
            name: \(name)
            stages:
              - \(first)
              - \(second)
              - upload: { method: local, dir: dest }

            """
        let (result, reports) = try run(pipeline, [folder.file("in")], in: folder)
        #expect(result.status == 0, "\(result.stderr) \(reports)")
        let report = try #require(reports.first)
        #expect(report["status"] as? String == "passed", "\(report)")
        return (folder, report)
    }

    /// Two `jpeg` stages (a resize, then a recompress) in one pipeline: each writes its own work file, the second
    /// reads the first's, and what is uploaded is the second's. They shared one path before, so the second wrote
    /// over its own input.
    @Test func twoJpegStagesEachWriteTheirOwnFile() throws {
        let (folder, report) = try runTwoStages(
            "two-jpeg", input: "-f lavfi -i testsrc2=size=640x480 -frames:v 1 -q:v 2 in/x.jpg",
            "jpeg: { max_dimension: 160, quality: 95, as: resized }", "jpeg: { quality: 30, as: small }")
        let facts = try #require(report["facts"] as? [String: Any])
        let resized = try #require(facts["resized"] as? [String: Any])
        let small = try #require(facts["small"] as? [String: Any])
        let firstPath = try #require(resized["path"] as? String)
        let secondPath = try #require(small["path"] as? String)
        #expect(firstPath != secondPath)
        // Inside the run's own folder, `<work>/run-<pid>-<hex>/`.
        #expect(firstPath.hasPrefix(folder.workDirectory + "/run-"), "\(firstPath)")
        #expect(firstPath.contains("/0-jpeg/"), "\(firstPath)")
        #expect(secondPath.contains("/1-jpeg/"), "\(secondPath)")
        // The second stage read the first's output, and the upload took the second's.
        #expect(small["before_bytes"] as? Int == resized["after_bytes"] as? Int)
        #expect(small["source_width"] as? Int == 160)
        let uploaded = folder.file("dest/x.jpg")
        let size = try FileManager.default.attributesOfItem(atPath: uploaded)[.size] as? Int
        #expect(size == small["after_bytes"] as? Int)
        #expect(try folder.stream(uploaded, "video")?["width"] as? Int == 160)
        #expect(folder.filesInWork().isEmpty)
    }

    /// Two `video` stages (a downscale, then a remux): the second failed with "the output path is the input" when
    /// both wrote `<work>/video/…/clip.mp4.mp4`.
    @Test func twoVideoStagesEachWriteTheirOwnFile() throws {
        let (folder, _) = try runTwoStages(
            "two-video", input: "-f lavfi -i testsrc2=size=320x240:rate=25 -t 1 -c:v mpeg4 in/clip.mp4",
            "video: { mode: transcode, max_height: 120, as: scaled }", "video: { mode: remux, as: remuxed }")
        let uploaded = folder.file("dest/clip.mp4")
        let video = try #require(try folder.stream(uploaded, "video"))
        #expect(video["codec_name"] as? String == "h264")
        #expect(video["height"] as? Int == 120)
        #expect(folder.filesInWork().isEmpty)
    }

    /// `max_work_bytes` holds for every stage that writes work files, not only `jpeg`.
    @Test(arguments: ["video: { mode: transcode }", "audio: {}"])
    func maxWorkBytesAppliesToMediaTranscodes(_ stage: String) throws {
        let folder = try MediaFolder("work-budget")
        try FileManager.default.createDirectory(atPath: folder.file("in"), withIntermediateDirectories: true)
        try folder.ffmpeg("-f lavfi -i testsrc2=size=160x120 -f lavfi -i sine -t 1 -c:v mpeg4 -c:a aac in/clip.mov")
        let pipeline = try Pipeline.parse(
            yaml: "version: 1\nname: budget\nmax_work_bytes: 1KiB\nstages:\n  - \(stage)\n", source: "test.yml",
            environment: [:])
        let runner = Runner(
            pipeline: pipeline, settings: RunSettings(workDirectory: folder.workDirectory, environment: [:]))
        var reports: [ItemReport] = []
        try runner.run(paths: [folder.file("in")]) { reports.append($0) }
        #expect(reports.count == 1)
        #expect(reports.first?.status == .failed)
        #expect(reports.first?.failures.first?.rule.rawValue == "max_work_bytes")
        #expect(folder.filesInWork().isEmpty)
    }
}
