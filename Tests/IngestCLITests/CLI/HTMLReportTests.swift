import Foundation
import NativeJPEG
import Testing

@testable import IngestCore
@testable import IngestMedia
@testable import IngestRun
@testable import IngestTestSupport

/// `--report x.html`: one self-contained page, looked at in headless Chromium as a person would: failures first
/// with their rules, a thumbnail for every photo and video that is really a picture, a level strip for audio,
/// filters that work, and no secret and no request to anywhere.
@Suite struct HTMLReportTests {
    let ingest = TestPaths.ingest

    /// Samples/good (8 files that pass preflight) and Samples/bad (4 that fail) under `media/`.
    func samples() throws -> TemporaryFolder {
        let folder = try TemporaryFolder("html-report")
        for group in ["good", "bad"] {
            try FileManager.default.copyItem(
                atPath: TestPaths.root + "/Samples/" + group, toPath: folder.path + "/media/" + group)
        }
        return folder
    }

    /// The `data-status` of every card, in page order.
    func statuses(_ page: String) -> [String] {
        matches(#"<article class="card [a-z]+" data-status="([a-z]+)""#, in: page)
    }

    func matches(_ pattern: String, in text: String) -> [String] {
        guard let regex = try? NSRegularExpression(pattern: pattern) else { return [] }
        return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap {
            Range($0.range(at: 1), in: text).map { String(text[$0]) }
        }
    }

    @Test func pageShowsFailuresFirstWithThumbnails() throws {
        let folder = try samples()
        defer { folder.remove() }
        let pipeline = TestPaths.root + "/pipelines/preflight.yml"
        let result = try runCommand(
            ingest, ["validate", pipeline, "media", "--report", "batch.html", "-q"], directory: folder.path)
        #expect(result.status == 1, "\(result.stderr)")
        let html = try String(contentsOfFile: folder.path + "/batch.html", encoding: .utf8)
        // Self-contained: nothing to fetch, and the policy forbids fetching anything but data: images.
        #expect(!html.contains("http://") && !html.contains("https://"))
        #expect(html.contains("default-src 'none'; img-src data: 'self'"))

        let dom = try Chromium.dumpDOM("file://" + folder.path + "/batch.html")
        #expect(dom.contains("data-scripted="), "the page's script ran")
        #expect(statuses(dom) == Array(repeating: "failed", count: 4) + Array(repeating: "passed", count: 8))
        // Each failure names its rule, and where the rule compares, what it expected and found.
        let failedSection = String(dom[..<(dom.range(of: "id=\"rest\"")?.lowerBound ?? dom.endIndex)])
        for rule in ["validate.min_bytes", "validate.content", "validate.corrupt"] {
            #expect(failedSection.contains("<code>\(rule)</code>"), "\(rule)")
        }
        #expect(failedSection.contains("expected <b>"))

        // Thumbnails: the 7 pictures and videos of good/ and the JPEG named .mov in bad/; none blank, none over
        // 320 px; portrait ones upright.
        let images = matches(#"src="data:image/jpeg;base64,([A-Za-z0-9+/=]+)""#, in: dom)
        #expect(images.count == 8)
        let decompressor = try TurboJPEGDecompressor()
        var portrait = 0
        for base64 in images {
            let jpeg = try #require(Data(base64Encoded: base64)).map { $0 }
            let header = try decompressor.header(of: jpeg)
            #expect(max(header.width, header.height) <= 320)
            let rgb = try decompressor.decodeToRGB(jpeg, width: header.width, height: header.height)
            let thumbnail = Thumbnail(
                width: rgb.width, height: rgb.height, stride: rgb.planes[0].stride, rows: rgb.storage)
            #expect(thumbnail.lumaVariance > 300, "a blank thumbnail (\(header.width)×\(header.height))")
            if header.height > header.width { portrait += 1 }
        }
        // photo.jpg, photo-named.mov (EXIF orientation 6) and portrait.mov (display matrix).
        #expect(portrait == 3)
        #expect(dom.contains("aria-label=\"audio levels\""), "voice.m4a has its level strip")
        #expect(dom.contains("<template><pre>"), "probe facts on demand")
    }

    @Test func filtersHideWhatIsNotAskedFor() throws {
        let folder = try samples()
        defer { folder.remove() }
        let pipeline = TestPaths.root + "/pipelines/preflight.yml"
        // The page on standard output (`--report -`): thumbnails inline, as there is no folder to put them in.
        let result = try runCommand(
            ingest, ["validate", pipeline, "media", "--report-format", "html", "--report", "-", "-q"],
            directory: folder.path)
        #expect(result.stdout.hasPrefix("<!DOCTYPE html>"))
        #expect(matches(#"(src="data:image/jpeg)"#, in: result.stdout).count == 8)
        try result.stdout.write(toFile: folder.path + "/piped.html", atomically: true, encoding: .utf8)
        let url = "file://" + folder.path + "/piped.html"
        let onlyFailed = try Chromium.dumpDOM(url + "#status=failed")
        #expect(matches(#"data-status="passed"[^>]* (hidden)"#, in: onlyFailed).count == 8)
        #expect(matches(#"data-status="failed"[^>]* (hidden)"#, in: onlyFailed).isEmpty)
        let oneRule = try Chromium.dumpDOM(url + "#rule=validate.min_bytes")
        let shown = matches(#"<article class="card ([a-z]+)"(?![^>]* hidden)[^>]*>"#, in: oneRule)
        #expect(shown == ["failed"], "only empty.mov broke min_bytes")
        #expect(oneRule.contains("<b id=\"shown\">1</b>"))
    }

    @Test func reportFromTheJournalIsHTMLToo() throws {
        let folder = try samples()
        defer { folder.remove() }
        let pipeline = TestPaths.root + "/pipelines/preflight.yml"
        let run = try runCommand(ingest, ["run", pipeline, "media", "-q"], directory: folder.path)
        #expect(run.status == 1, "\(run.stderr)")
        let report = try runCommand(ingest, ["report", "--output", "journal.html"], directory: folder.path)
        #expect(report.status == 1, "\(report.stderr)")
        let html = try String(contentsOfFile: folder.path + "/journal.html", encoding: .utf8)
        #expect(statuses(html) == Array(repeating: "failed", count: 4) + Array(repeating: "passed", count: 8))
        #expect(matches(#"(src="data:image/jpeg)"#, in: html).count == 8)
    }

    /// Past the inline limit the thumbnails go to `NAME_files/` beside the report and the page loads them lazily
    /// from there; a page that opens them finds every one.
    @Test func largeBatchPutsThumbnailsBeside() throws {
        let folder = try samples()
        defer { folder.remove() }
        let output = try ReportOutput(path: folder.path + "/big batch.html")
        let writer = try HTMLReportWriter(output: output, pipelineName: "many")
        writer.inlineLimit = 2
        var counts = RunSummary()
        for name in ["good/photo.jpg", "good/plain.mov", "good/graphic.png", "good/voice.m4a"] {
            let report = ItemReport(path: folder.path + "/media/" + name, relativePath: name, status: .passed)
            try writer.write(report)
            counts.add(.passed)
        }
        try writer.finish(counts)
        let html = try String(contentsOfFile: folder.path + "/big batch.html", encoding: .utf8)
        #expect(!html.contains("data:image/jpeg"))
        let sources = matches(#"<img loading="lazy"[^>]* src="([^"]+)""#, in: html)
        #expect(sources.count == 3)
        for source in sources {
            #expect(source.hasPrefix("./big%20batch_files/"), "\(source)")
            let file = folder.path + "/big batch_files/" + (source as NSString).lastPathComponent
            let jpeg = try #require(FileManager.default.contents(atPath: file)).map { $0 }
            #expect(try TurboJPEGDecompressor().header(of: jpeg).width <= 320)
        }
    }

    /// Past the first 100 cards of a section, cards wait as raw text until the reader scrolls near them; any
    /// filter makes them all first, so it counts every file.
    @Test func cardsPastTheFirstChunkWaitAndFiltersSeeThemAll() throws {
        let folder = try TemporaryFolder("html-chunks")
        defer { folder.remove() }
        let output = try ReportOutput(path: folder.path + "/many.html")
        let writer = try HTMLReportWriter(output: output, pipelineName: "many")
        var counts = RunSummary()
        for index in 0..<250 {
            let name = "clip-\(index).mov"
            try writer.write(ItemReport(path: folder.path + "/" + name, relativePath: name, status: .passed))
            counts.add(.passed)
        }
        try writer.finish(counts)
        let html = try String(contentsOfFile: folder.path + "/many.html", encoding: .utf8)
        #expect(matches(#"(<script type="text/html" class="more">)"#, in: html).count == 2)
        let url = "file://" + folder.path + "/many.html"
        let opened = try Chromium.dumpDOM(url)
        #expect(opened.contains("<b id=\"shown\">250</b>"))
        let filtered = try Chromium.dumpDOM(url + "#q=clip-2")
        #expect(!filtered.contains("class=\"more\""), "every chunk was made into cards")
        // clip-2, clip-20…29, clip-200…249: 1 + 10 + 50.
        #expect(filtered.contains("<b id=\"shown\">61</b>"))
    }

    @Test func secretsAreRedacted() throws {
        let folder = try TemporaryFolder("html-secret")
        defer { folder.remove() }
        let secret = "X-Amz-Signature=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
        let url = "https://bucket.example/key.mov?X-Amz-Credential=AKIA%2Fx&\(secret)"
        let failure = RuleFailure(
            stage: "upload", rule: .status, message: "the server refused \(url)", expected: "200",
            actual: "403 for \(url)")
        var report = ItemReport(
            path: folder.path + "/clip.mov", relativePath: "clip.mov", status: .failed, failures: [failure],
            facts: ["ticket": .object(["upload_url": .string(url), "token": .string("Bearer abc.def.ghi")])])
        report.timings = nil
        let output = try ReportOutput(path: folder.path + "/r.html")
        let writer = try ReportFormat.html.makeWriter(output: output, pipelineName: "secret-test")
        try writer.write(report)
        var counts = RunSummary()
        counts.add(.failed)
        try writer.finish(counts)
        let html = try String(contentsOfFile: folder.path + "/r.html", encoding: .utf8)
        #expect(html.contains("the server refused"))
        #expect(!html.contains("0123456789abcdef0123456789abcdef"))
        #expect(!html.contains("abc.def.ghi"))
    }
}
