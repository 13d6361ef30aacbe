import Foundation
import Testing

@testable import IngestCore
@testable import IngestNetwork
@testable import IngestStages
@testable import IngestTestSupport

/// Seed 002 (vehicle-photos.yml): the transcoded JPEG sent once per photo, the subject reported, faults survived.
extension SeedPipelinesAV {
    /// What the tool means to send for `photo`: the `jpeg` stage run in-process with the options seed 002 asks for
    /// (quality 0.8, upright, metadata stripped), not with the ones the pipeline file says, so a drift in the file
    /// shows as a different upload.
    func expectedJPEG(for photo: String, work: String) throws -> (path: String, sha256: String) {
        var options = JpegStage.Options()
        options.quality = JpegStage.Quality(libjpeg: 80)
        options.metadata = .strip
        let item = Item(path: photo, relativePath: (photo as NSString).lastPathComponent, size: 0)
        _ = try JpegStage(options: options).run(
            item, context: StageContext(settings: RunSettings(workDirectory: work, environment: [:])))
        return (item.artifact, try sha256sum(item.artifact))
    }

    /// Photos beside the samples: a generated JPEG with an upper-case extension (good) and a text file named .jpg
    /// (fails validation). Returns the folder.
    func makeGeneratedPhotos(in folder: TemporaryFolder) throws -> String {
        let generated = try folder.folder("photos")
        try ffmpeg([
            "-f", "lavfi", "-i", "testsrc=size=200x150", "-frames:v", "1", "-f", "image2", "-c:v", "mjpeg",
            generated + "/truck.JPEG",
        ])
        try folder.file("photos/notes.jpg", "not a photo\n")
        return generated
    }

    @Test func vehiclePhotosSendsTheTranscodedJPEGOnceAndReportsTheSubject() throws {
        let backend = try Self.backend()
        let folder = try TemporaryFolder("seed002")
        defer { folder.remove() }
        let generated = try makeGeneratedPhotos(in: folder)
        let (result, reports) = try run(
            "vehicle-photos.yml", [Self.samples, generated], in: folder, environment: ["DISCERNER_API": backend.base])
        #expect(result.status == 1, "the text file fails: \(result.stdout)\(result.stderr)")
        let good =
            ["good/photo.jpg", "good/photo.heic", "good/graphic.png"].map { Self.samples + "/" + $0 }
            + [generated + "/truck.JPEG"]
        // Only photos are taken (the .mov and .m4a samples are not in the report); the text file fails.
        #expect(Set(reports.keys) == Set(good + [generated + "/notes.jpg"]), "\(reports.keys.sorted())")
        #expect(reports[generated + "/notes.jpg"]?["status"] as? String == "failed")
        #expect(rules(reports[generated + "/notes.jpg"]).contains("content"))

        try expectS3HoldsWhatArrived(backend, in: folder)
        let objects = try backend.objects()
        #expect(objects.count == good.count, "nothing for the failed file: \(objects.keys.sorted())")
        for photo in good {
            let report = try #require(reports[photo])
            #expect(report["status"] as? String == "passed", "\(photo): \(report)")
            let ticket = try #require(facts(report)["ticket"] as? [String: Any])
            let key = try #require(ticket["image_key"] as? String)
            let stored = try #require(objects[key], "\(key) not stored")
            #expect(stored["count"] as? Int == 1)
            #expect(stored["content_type"] as? String == "image/jpeg")
            // Byte for byte the pipeline's transcode, not the original.
            let expected = try expectedJPEG(for: photo, work: folder.path + "/expected")
            #expect(stored["sha256"] as? String == expected.sha256, "\(photo)")
            #expect(stored["sha256"] as? String != (try sha256sum(photo)))
            #expect(stored["size"] as? Int == (facts(report)["jpeg"] as? [String: Any])?["after_bytes"] as? Int)
            // The subject is in the report.
            let subject = (facts(report)["report"] as? [String: Any])?["primary_subject"] as? [String: Any]
            #expect(subject?["category"] as? String == "commercial_vehicle")
            #expect(subject?["fleet_id"] as? String == "1Z2345")
        }
        // The samples carry GPS and orientation 6: what was sent is upright (320×240 turned to 240×320), has no GPS
        // and no orientation tag (read back by exiftool, independently of the encoder).
        let sentPhoto = try expectedJPEG(for: Self.samples + "/good/photo.jpg", work: folder.path + "/check")
        let tags = try runTool("exiftool", ["-j", "-n", "-a", "-G1", sentPhoto.path])
        let exif = try #require(
            (try JSONSerialization.jsonObject(with: Data(tags.stdout.utf8)) as? [[String: Any]])?.first)
        #expect(exif["File:ImageWidth"] as? Int == 240 && exif["File:ImageHeight"] as? Int == 320, "\(exif)")
        #expect(!exif.keys.contains { $0.hasPrefix("GPS") || $0.contains(":GPS") || $0.hasSuffix("Orientation") })
        let original = try runTool("exiftool", ["-n", "-GPSLatitude", Self.samples + "/good/photo.jpg"]).stdout
        #expect(original.contains("GPS Latitude"), "the sample has GPS to strip")

        // One analysis per stored photo, naming its key and bucket as the ticket gave them.
        let analyses = try bodies(backend, "/analyze")
        #expect(analyses.count == good.count)
        #expect(Set(analyses.compactMap { $0["image_key"] as? String }) == Set(objects.keys))
        #expect(analyses.allSatisfy { $0["bucket_name"] as? String == backend.bucket && $0.count == 2 })
        #expect(
            try bodies(backend, "/upload-url").allSatisfy { $0.count == 1 && $0["file_extension"] as? String == "jpg" })
        #expect(try backend.counts("tickets") == ["/upload-url": good.count])
    }

    /// Phones export `IMG_1.HEIC` beside `IMG_1.JPG`: the two transcodes must not share a work file (they did, and
    /// whichever finished first removed the other's upload).
    @Test func vehiclePhotosOfOneNameInTwoFormatsGetTheirOwnWorkFiles() throws {
        let folder = try TemporaryFolder("seed002-names")
        defer { folder.remove() }
        let stage = try JpegStage(options: JpegStage.Options())
        let context = StageContext(settings: RunSettings(workDirectory: folder.path + "/work", environment: [:]))
        var artifacts: [String] = []
        for name in ["photo.jpg", "photo.heic", "graphic.png"] {
            let item = Item(path: Self.samples + "/good/" + name, relativePath: "good/" + name, size: 0)
            _ = try stage.run(item, context: context)
            artifacts.append(item.artifact)
        }
        #expect(Set(artifacts).count == 3, "\(artifacts)")
        #expect(artifacts.allSatisfy { FileManager.default.fileExists(atPath: $0) })
        #expect(artifacts.allSatisfy { $0.hasPrefix(folder.path + "/work/jpeg/0/good/") && $0.hasSuffix(".jpg") })
    }

    @Test func vehiclePhotosSurvivesServerErrorsRateLimitAndExpiredURL() throws {
        let faults = """
            [{"method": "POST", "path": "/upload-url", "action": "status", "status": 502, "times": 1},
             {"method": "POST", "path": "/upload-url", "action": "expired_ticket", "times": 1},
             {"method": "PUT", "action": "status", "status": 500, "times": 1},
             {"method": "POST", "path": "/analyze", "action": "status", "status": 429, "retry_after": "1", "times": 1},
             {"method": "POST", "path": "/analyze", "action": "status", "status": 503, "times": 1}]
            """
        let backend = try Self.backend(faults: faults)
        let folder = try TemporaryFolder("seed002-faults")
        defer { folder.remove() }
        let (result, reports) = try run(
            "vehicle-photos.yml", [Self.samples + "/good"], in: folder, environment: ["DISCERNER_API": backend.base])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)\(reports)")
        #expect(reports.count == 3)
        #expect(reports.values.allSatisfy { $0["status"] as? String == "passed" })
        let statuses = try backend.requests().map { "\($0[0]) \($0[1]) \($0[2])" }
        #expect(statuses.filter { $0.hasPrefix("PUT") && $0.hasSuffix(" 403") }.count == 1, "\(statuses)")
        #expect(statuses.filter { $0 == "POST /analyze 429" }.count == 1)
        #expect(try backend.counts("tickets") == ["/upload-url": 4])
        try expectS3HoldsWhatArrived(backend, in: folder)
        let objects = try backend.objects()
        #expect(objects.count == 3)
        #expect(objects.values.allSatisfy { $0["count"] as? Int == 1 && $0["content_type"] as? String == "image/jpeg" })
        for photo in ["photo.jpg", "photo.heic", "graphic.png"] {
            let expected = try expectedJPEG(for: Self.samples + "/good/" + photo, work: folder.path + "/expected")
            #expect(objects.values.contains { $0["sha256"] as? String == expected.sha256 }, "\(photo)")
        }
        let analyses = try bodies(backend, "/analyze")
        #expect(analyses.count == 3)
        #expect(Set(analyses.compactMap { $0["image_key"] as? String }) == Set(objects.keys))
    }
}
