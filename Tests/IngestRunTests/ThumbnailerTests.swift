import Foundation
import NativeJPEG
import Testing

@testable import IngestMedia
@testable import IngestRun
@testable import IngestStages
@testable import IngestStagesTestSupport
@testable import IngestTestSupport

/// The contact sheet's thumbnailers on real files: EXIF orientation applied, a representative (not black) video
/// frame, the display rotation of a portrait clip, at most 320 px on the long side, and an audio level strip that
/// follows the sound.
@Suite struct ThumbnailerTests {
    let samples = TestPaths.root + "/Samples/good/"

    @Test func jpegOrientationIsApplied() throws {
        // photo.jpg is stored 320×240 with EXIF orientation 6 (turn 90° clockwise): upright it is 240×320.
        let thumbnail = try StillThumbnailer.jpeg(path: samples + "photo.jpg")
        #expect(thumbnail.width == 240 && thumbnail.height == 320)
        // The picture turned, not just the size: testsrc's colour bars run across the stored image, so upright
        // each row is one colour from left to right... and the columns change from top to bottom.
        #expect(thumbnail.lumaVariance > 500)
    }

    @Test func heicIsUprightAndPNGIsKeptSmall() throws {
        // photo.heic is stored 320×240 with no rotation box (its EXIF orientation is informational in HEIF, as the
        // jpeg stage treats it): shown as stored, as libheif and HEIF viewers do.
        let heic = try StillThumbnailer.heif(path: samples + "photo.heic")
        #expect(heic.width == 320 && heic.height == 240)
        #expect(heic.lumaVariance > 500)
        let png = try StillThumbnailer.png(path: samples + "graphic.png")
        #expect(png.width == 200 && png.height == 150, "a small image is not enlarged")
        #expect(png.lumaVariance > 500)
    }

    @Test func largeStillsFitIn320() throws {
        let media = try MediaFolder("thumb-large")
        try media.ffmpeg("-f lavfi -i testsrc=size=1920x1080 -frames:v 1 -q:v 3 wide.jpg")
        try media.ffmpeg("-f lavfi -i testsrc=size=600x1000 -frames:v 1 tall.png")
        let wide = try StillThumbnailer.jpeg(path: media.file("wide.jpg"))
        #expect(wide.width == 320 && wide.height == 180)
        let tall = try StillThumbnailer.png(path: media.file("tall.png"))
        #expect(tall.width == 192 && tall.height == 320)
        // What the report embeds is a JPEG of that size.
        let jpeg = try wide.jpeg()
        let header = try TurboJPEGDecompressor().header(of: jpeg)
        #expect(header.width == 320 && header.height == 180)
    }

    @Test func videoFrameIsNotTheBlackOpening() throws {
        // A clip that opens on 1.2 s of black, as camera clips often do, then shows a picture.
        let media = try MediaFolder("thumb-black")
        try media.ffmpeg(
            "-f lavfi -i color=c=black:s=640x360:r=25:d=1.2 -f lavfi -i testsrc=s=640x360:r=25:d=2.8 "
                + "-filter_complex '[0][1]concat=n=2:v=1:a=0' -c:v libx264 -preset ultrafast -pix_fmt yuv420p clip.mp4")
        let result = try VideoThumbnailer.thumbnail(path: media.file("clip.mp4"), demuxer: .mov)
        #expect(result.thumbnail.width == 320 && result.thumbnail.height == 180)
        #expect(result.thumbnail.lumaVariance > 1000, "variance \(result.thumbnail.lumaVariance): a black frame")
        #expect(result.time >= 1.2)
        #expect(abs((result.duration ?? 0) - 4.0) < 0.1)
    }

    @Test func portraitVideoIsTurnedUpright() throws {
        // portrait.mov is 160×120 with a display matrix rotating it 90°: players show it 120×160.
        let result = try VideoThumbnailer.thumbnail(path: samples + "portrait.mov", demuxer: .mov)
        #expect(result.thumbnail.width == 120 && result.thumbnail.height == 160)
        let plain = try VideoThumbnailer.thumbnail(path: samples + "plain.mov", demuxer: .mov)
        #expect(plain.thumbnail.width == 160 && plain.thumbnail.height == 120)
        #expect(plain.thumbnail.lumaVariance > 500)
    }

    @Test func audioLevelsFollowTheSound() throws {
        // One second of silence, then one of a loud tone.
        let media = try MediaFolder("thumb-audio")
        try media.ffmpeg(
            "-f lavfi -i anullsrc=r=44100:cl=mono:d=1 -f lavfi -i sine=f=440:r=44100:d=1 "
                + "-filter_complex '[0][1]concat=n=2:v=0:a=1,volume=8' -c:a aac -b:a 64k tone.m4a")
        let result = try AudioWaveform.peaks(path: media.file("tone.m4a"), demuxer: .mov, buckets: 100)
        #expect(result.peaks.count == 100)
        let quiet = result.peaks[5..<40].max() ?? 1
        let loud = result.peaks[60..<95].min() ?? 0
        #expect(quiet < 0.02, "\(result.peaks)")
        #expect(loud > 0.3, "\(result.peaks)")
    }

    @Test func contactSheetNamesWhyThereIsNoPreview() throws {
        let bad = TestPaths.root + "/Samples/bad/"
        #expect(ContactSheet.preview(path: bad + "empty.mov") == .none("empty file"))
        guard case .none(let reason) = ContactSheet.preview(path: bad + "truncated.mov") else {
            Issue.record("a truncated clip has no thumbnail")
            return
        }
        #expect(reason.contains("moov atom not found"), "\(reason)")
        // A JPEG named .mov is still previewed as what it is.
        guard case .picture(_, let width, let height, nil) = ContactSheet.preview(path: bad + "photo-named.mov") else {
            Issue.record("a JPEG named .mov gets its thumbnail")
            return
        }
        #expect(width == 240 && height == 320)
    }
}
