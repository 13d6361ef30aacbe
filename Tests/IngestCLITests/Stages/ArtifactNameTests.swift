import Foundation
import Testing

@testable import IngestTestSupport

/// After a transcode the upload is named for what it holds: `IMG_1.HEIC` recompressed to JPEG is stored as
/// `IMG_1.jpg`, `clip.mov` made MP4 as `clip.mp4`; `{{artifact.*}}` offers those names to templates.
@Suite struct ArtifactNameTests {
    let ingest = TestPaths.ingest

    /// A folder `in/` with the given samples copied under new names.
    func inputs(_ copies: [String: String]) throws -> TemporaryFolder {
        let folder = try TemporaryFolder("artifact-names")
        for (name, sample) in copies {
            let destination = folder.path + "/in/" + name
            try FileManager.default.createDirectory(
                atPath: (destination as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: TestPaths.root + "/Samples/good/" + sample, toPath: destination)
        }
        return folder
    }

    func files(under folder: String) -> [String] {
        ((try? FileManager.default.subpathsOfDirectory(atPath: folder)) ?? []).filter {
            var directory: ObjCBool = false
            return FileManager.default.fileExists(atPath: folder + "/" + $0, isDirectory: &directory)
                && !directory.boolValue
        }.sorted()
    }

    @Test func recompressedPhotosAreStoredUnderTheirNewExtension() throws {
        let folder = try inputs(["day1/IMG_1.HEIC": "photo.heic", "IMG_2.JPG": "photo.jpg", "art.png": "graphic.png"])
        defer { folder.remove() }
        let pipeline = try folder.file(
            "p.yml",
            """
            version: 1
            name: names
            stages:
              - jpeg: { quality: 0.8 }
              - upload: { method: local, dir: dest }
              - upload:
                  method: local
                  dir: named
                  key: "{{artifact.stem}}~{{file.ext}}.{{artifact.ext}}|{{artifact.name}}"

            """)
        let result = try runCommand(ingest, ["run", pipeline, "in", "--no-journal"], directory: folder.path)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        // The default key is the relative path with the artifact's extension; a JPEG keeps its own spelling.
        #expect(files(under: folder.path + "/dest") == ["IMG_2.JPG", "art.jpg", "day1/IMG_1.jpg"])
        #expect(
            files(under: folder.path + "/named") == [
                "IMG_1~HEIC.jpg|IMG_1.jpg", "IMG_2~JPG.JPG|IMG_2.JPG", "art~png.jpg|art.jpg",
            ])
        let magic = try Data(contentsOf: URL(fileURLWithPath: folder.path + "/dest/day1/IMG_1.jpg")).prefix(3)
        #expect(Array(magic) == [0xFF, 0xD8, 0xFF])
    }

    @Test func remuxedVideoIsStoredAsMP4() throws {
        let folder = try inputs(["clip.mov": "plain.mov"])
        defer { folder.remove() }
        let pipeline = try folder.file(
            "p.yml",
            """
            version: 1
            name: names
            stages:
              - video: { container: mp4 }
              - upload: { method: local, dir: dest }
              - upload: { method: local, dir: dest, key: "copy/{{artifact.path}}" }

            """)
        let result = try runCommand(ingest, ["run", pipeline, "in", "--no-journal"], directory: folder.path)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(files(under: folder.path + "/dest") == ["clip.mp4", "copy/clip.mp4"])
    }

    @Test func unknownArtifactFieldNamesWhatItOffers() throws {
        let folder = try inputs(["a.jpg": "photo.jpg"])
        defer { folder.remove() }
        let pipeline = try folder.file(
            "p.yml",
            "version: 1\nname: names\nstages:\n  - upload: { method: local, dir: dest, key: \"{{artifact.nme}}\" }\n")
        let result = try runCommand(ingest, ["run", pipeline, "in", "--no-journal"], directory: folder.path)
        // Refused when the file loads (the template check), before any file is read.
        #expect(result.status == 2)
        #expect(
            result.stderr.contains("{{artifact.nme}}: artifact offers name, stem, ext, size, path"), "\(result.stderr)")
    }
}
