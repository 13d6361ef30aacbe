import Foundation
import Testing

@testable import IngestCore
@testable import IngestMedia
@testable import IngestTestSupport

/// A WebP poster through the `ingest` binary: sent as `image/webp` under its own name, and shown on the HTML
/// report's card as a JPEG poster is.
@Suite(.serialized) struct WebPPosterUploadTests {
    @Test func aWebPPosterIsSentAsImageWebPAndShownInTheReport() throws {
        let backend = try FixtureBackend()
        defer { backend.stop() }
        let folder = try TemporaryFolder("webp-poster")
        defer { folder.remove() }
        try OutputUploadTests.makeBlackThenPicture(folder)
        let s3 = OutputUploadTests.s3(backend)
        let pipeline = try folder.file(
            "p.yml",
            """
            version: 1
            name: webp
            stages:
              - poster: { at: 0.2s, format: webp, quality: 0.8 }
              - upload: { \(s3), output: poster, key: "v/{{outputs.poster.name}}" }

            """)
        let run = try runCommand(
            TestPaths.ingest, ["run", pipeline, "in", "--report", "r.html", "-q", "--no-journal"],
            environment: environmentWithoutProxies([:]), directory: folder.path)
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        let objects = try backend.objects()
        let stored = try #require(objects["v/clip.poster.webp"], "\(objects.keys)")
        #expect(stored["content_type"] as? String == "image/webp")
        let size = try #require(stored["size"] as? Int)
        let html = try String(contentsOfFile: folder.path + "/r.html", encoding: .utf8)
        #expect(html.contains("outputs: poster <b>\(ByteSize.format(Int64(size)))</b>"), "\(html)")
        // The card shows the black poster at 0.2 s, decoded from the WebP, not a frame the report picks itself.
        let luma = try OutputUploadTests.cardLuma(html, folder: folder)
        #expect(luma < 24, "the card shows another frame than the poster (mean luma \(luma))")
    }
}
