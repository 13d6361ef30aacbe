import Foundation
import Testing

@testable import IngestCore
@testable import IngestMedia
@testable import IngestTestSupport

/// `upload: { output: NAME }` in real runs of the `ingest` binary against the fixture backend's S3: each output is
/// its own object, and the journal keeps each output's upload on its own.
@Suite(.serialized) struct OutputUploadTests {
    /// A 3-second 320×240 clip with sound, in `folder/in`.
    static func makeClip(_ folder: TemporaryFolder) throws {
        try FileManager.default.createDirectory(atPath: folder.path + "/in", withIntermediateDirectories: true)
        let made = try runCommand(
            "/bin/sh",
            [
                "-c",
                "cd '\(folder.path)/in' && ffmpeg -nostdin -v error -y -f lavfi -i testsrc=size=320x240:rate=25 "
                    + "-f lavfi -i sine=sample_rate=48000 -t 3 -c:v mpeg4 -q:v 3 -c:a aac clip.mov",
            ])
        try #require(made.status == 0, "\(made.stderr)")
    }

    /// An upload's options for the fixture backend's S3 bucket `fixture`.
    static func s3(_ backend: FixtureBackend) -> String {
        "method: s3, bucket: fixture, endpoint: \"\(backend.base)\", region: us-east-1, access_key_id: AKID, "
            + "secret_access_key: secret"
    }

    static func pipeline(_ backend: FixtureBackend, in folder: TemporaryFolder) throws -> String {
        let s3 = Self.s3(backend)
        return try folder.file(
            "p.yml",
            """
            version: 1
            name: outputs
            stages:
              - probe:
              - poster: { output: poster }
              - video: { output: proxy, max_width: 160, mode: transcode, preset: ultrafast }
              - upload: { \(s3), key: "v/original.mov", as: original }
              - upload: { \(s3), output: poster, key: "v/poster-{{outputs.poster.size}}.jpg", as: poster_upload }
              - upload: { \(s3), output: proxy, key: "v/proxy.mp4", as: proxy_upload }

            """)
    }

    /// The poster's object (its key names its size) and its key.
    static func poster(in objects: [String: [String: Any]]) -> (String, [String: Any])? {
        objects.first { $0.key.hasPrefix("v/poster-") }.map { ($0.key, $0.value) }
    }

    @Test func eachOutputIsStoredUnderItsOwnKey() throws {
        let backend = try FixtureBackend()
        defer { backend.stop() }
        let folder = try TemporaryFolder("output-upload")
        defer { folder.remove() }
        try Self.makeClip(folder)
        let run = try runCommand(
            TestPaths.ingest, ["run", try Self.pipeline(backend, in: folder), "in", "--report", "r.jsonl"],
            environment: environmentWithoutProxies([:]), directory: folder.path)
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        let objects = try backend.objects()
        #expect(objects["v/original.mov"]?["content_type"] as? String == "video/quicktime")
        #expect(objects["v/proxy.mp4"]?["content_type"] as? String == "video/mp4")
        // The key holds `{{outputs.poster.size}}`: the object stored under it has that many bytes.
        let (posterKey, poster) = try #require(Self.poster(in: objects), "\(objects.keys.sorted())")
        #expect(poster["content_type"] as? String == "image/jpeg")
        let posterSize = try #require(poster["size"] as? Int)
        #expect(posterKey == "v/poster-\(posterSize).jpg")
        let report = try String(contentsOfFile: folder.path + "/r.jsonl", encoding: .utf8)
        #expect(report.contains("\"size\":\(posterSize)"), "\(report)")
    }

    /// Killed while the proxy's upload is under way (the poster's is done): the next run sends only the proxy, and
    /// does not make the poster again.
    @Test func aKillBetweenTwoOutputUploadsSendsOnlyWhatIsMissing() throws {
        let gate = "/nonexistent-gate-\(UUID().uuidString)"
        let backend = try FixtureBackend(
            faults: #"[{"method": "PUT", "path": "/fixture/v/proxy", "action": "gate", "file": "\#(gate)"}]"#)
        defer { backend.stop() }
        let folder = try TemporaryFolder("output-kill")
        defer { folder.remove() }
        try Self.makeClip(folder)
        let pipeline = try Self.pipeline(backend, in: folder)
        try killIngest(["run", pipeline, "in", "-q"], in: folder.path, at: "the proxy's upload") {
            let arrived = (try? backend.state()["arrived"] as? [[Any]]) ?? []
            return arrived.contains { $0.last as? String == "/fixture/v/proxy.mp4" }
        }
        try backend.setFaults("[]")
        #expect(Self.poster(in: try backend.objects())?.1["count"] as? Int == 1)
        #expect(try backend.objects()["v/proxy.mp4"] == nil)
        let second = try runCommand(
            TestPaths.ingest, ["run", pipeline, "in", "--report", "r.jsonl"],
            environment: environmentWithoutProxies([:]), directory: folder.path)
        #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
        let objects = try backend.objects()
        #expect(objects["v/original.mov"]?["count"] as? Int == 1)
        #expect(Self.poster(in: objects)?.1["count"] as? Int == 1)
        #expect(objects["v/proxy.mp4"]?["count"] as? Int == 1)
        let report = try String(contentsOfFile: folder.path + "/r.jsonl", encoding: .utf8)
        // The poster was not made again: its description is the journal's, marked delivered earlier.
        #expect(report.contains("\"delivered_earlier\":true"), "\(report)")
        #expect(!report.contains("\"chosen\""), "the poster was picked again: \(report)")
    }

    /// An output sent twice (two uploads of the poster), killed during its second upload: one of its uploads is
    /// still to do, so the next run makes the poster again and sends only the second copy.
    @Test func anOutputWithAnUploadStillToDoIsMadeAgain() throws {
        let gate = "/nonexistent-gate-\(UUID().uuidString)"
        let backend = try FixtureBackend(
            faults: #"[{"method": "PUT", "path": "/fixture/v/copy", "action": "gate", "file": "\#(gate)"}]"#)
        defer { backend.stop() }
        let folder = try TemporaryFolder("output-twice")
        defer { folder.remove() }
        try Self.makeClip(folder)
        let s3 = Self.s3(backend)
        let pipeline = try folder.file(
            "p.yml",
            """
            version: 1
            name: twice
            stages:
              - poster: { output: poster }
              - upload: { \(s3), output: poster, key: "v/poster.jpg", as: first }
              - upload: { \(s3), output: poster, key: "v/copy.jpg", as: copy }

            """)
        try killIngest(["run", pipeline, "in", "-q"], in: folder.path, at: "the copy's upload") {
            let arrived = (try? backend.state()["arrived"] as? [[Any]]) ?? []
            return arrived.contains { $0.last as? String == "/fixture/v/copy.jpg" }
        }
        try backend.setFaults("[]")
        #expect(try backend.objects()["v/poster.jpg"]?["count"] as? Int == 1)
        #expect(try backend.objects()["v/copy.jpg"] == nil)
        let second = try runCommand(
            TestPaths.ingest, ["run", pipeline, "in", "--report", "r.jsonl"],
            environment: environmentWithoutProxies([:]), directory: folder.path)
        #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
        let objects = try backend.objects()
        #expect(objects["v/poster.jpg"]?["count"] as? Int == 1)
        #expect(objects["v/copy.jpg"]?["count"] as? Int == 1)
        #expect(objects["v/copy.jpg"]?["sha256"] as? String == objects["v/poster.jpg"]?["sha256"] as? String)
    }

    /// 1 s of black then 2 s of testsrc, 320×240, in `folder/in/clip.mov`: a poster at 0.2 s is black, a frame the
    /// HTML report's own frame picker would never choose.
    static func makeBlackThenPicture(_ folder: TemporaryFolder) throws {
        try FileManager.default.createDirectory(atPath: folder.path + "/in", withIntermediateDirectories: true)
        let made = try runCommand(
            "/bin/sh",
            [
                "-c",
                "cd '\(folder.path)/in' && ffmpeg -nostdin -v error -y -f lavfi -i color=black:size=320x240:rate=25:d=1 "
                    + "-f lavfi -i testsrc=size=320x240:rate=25:d=2 -filter_complex '[0][1]concat=n=2:v=1:a=0' "
                    + "-c:v mpeg4 -q:v 3 clip.mov",
            ])
        try #require(made.status == 0, "\(made.stderr)")
    }

    /// The mean luma of the picture the HTML report's (first) card shows.
    static func cardLuma(_ html: String, folder: TemporaryFolder) throws -> Double {
        let base64 = try #require(
            html.range(of: "data:image/jpeg;base64,").map { html[$0.upperBound...].prefix { $0 != "\"" } })
        let shown = folder.path + "/shown.jpg"
        try #require(Data(base64Encoded: String(base64))).write(to: URL(fileURLWithPath: shown))
        return try StillThumbnailer.jpeg(path: shown).lumaMean
    }

    /// The HTML report's card shows the poster the pipeline made (here a black frame at 0.2 s, which the report's
    /// own frame picker would never choose) and each output's size.
    @Test func theHTMLReportShowsThePosterAndEachOutputsSize() throws {
        let folder = try TemporaryFolder("output-html")
        defer { folder.remove() }
        try Self.makeBlackThenPicture(folder)
        let pipeline = try folder.file(
            "p.yml",
            """
            version: 1
            name: html
            stages:
              - poster: { at: 0.2s }
              - thumbnails: { count: 4 }
              - upload: { method: local, dir: out, output: poster }

            """)
        let run = try runCommand(
            TestPaths.ingest, ["run", pipeline, "in", "--report", "r.html", "-q", "--no-journal"],
            environment: environmentWithoutProxies([:]), directory: folder.path)
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        let html = try String(contentsOfFile: folder.path + "/r.html", encoding: .utf8)
        let posterSize = try #require(
            try FileManager.default.attributesOfItem(atPath: folder.path + "/out/clip.poster.jpg")[.size] as? Int64)
        #expect(html.contains("outputs: poster <b>\(ByteSize.format(posterSize))</b> · sheet <b>"), "\(html)")
        let luma = try Self.cardLuma(html, folder: folder)
        #expect(luma < 24, "the card shows another frame than the poster (mean luma \(luma))")
    }
}
