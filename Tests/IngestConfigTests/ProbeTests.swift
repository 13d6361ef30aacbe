import Foundation
import Testing

@testable import IngestConfig
@testable import IngestCore
@testable import IngestCoreTestSupport
@testable import IngestMedia
@testable import IngestTemplates
@testable import IngestTestSupport

/// The in-process probe against the ffprobe CLI on the committed samples, plus the files it must refuse.
@Suite struct ProbeTests {
    /// Samples ffprobe reads, except those the probe refuses on purpose: ffprobe happily follows the playlist.
    static let readableSamples = (Samples.files(in: "good") + Samples.files(in: "bad")).filter {
        (try? Sniffer.sniff(path: $0)) != .hlsPlaylist && FFprobeOracle.probe($0) != nil
    }

    @Test func samplesExist() {
        // Guards the oracle test below against silently running on nothing.
        #expect(Self.readableSamples.count >= 7)
        #expect(Self.readableSamples.contains(Samples.good("located.mov")))
    }

    /// Every sample ffprobe can read: duration within 1 ms, stream count, codec names, dimensions, sample rate,
    /// channels and rotation as ffprobe reports them.
    @Test(arguments: readableSamples)
    func matchesFFprobe(path: String) throws {
        try Self.compareWithFFprobe(path)
    }

    /// Containers beyond the samples, made here with the ffmpeg CLI: each demuxer on the allow-list once.
    @Test(arguments: [
        ("frag.mp4", ["-i", "SAMPLE", "-c", "copy", "-movflags", "frag_keyframe+empty_moov"]),
        ("clip.mkv", ["-i", "SAMPLE", "-c", "copy"]),
        (
            "clip.webm",
            ["-f", "lavfi", "-i", "testsrc=size=64x48:rate=10:duration=1", "-c:v", "libvpx", "-b:v", "100k"]
        ),
        ("tone.mp3", ["-f", "lavfi", "-i", "sine=duration=2", "-c:a", "libmp3lame", "-b:a", "64k"]),
        ("tone.aac", ["-f", "lavfi", "-i", "sine=duration=2", "-c:a", "aac"]),
        ("tone.wav", ["-f", "lavfi", "-i", "sine=duration=2"]),
        ("tone.flac", ["-f", "lavfi", "-i", "sine=duration=2"]),
        ("tone.ogg", ["-f", "lavfi", "-i", "sine=duration=2", "-c:a", "libvorbis"]),
        ("anim.gif", ["-f", "lavfi", "-i", "testsrc=size=64x48:rate=10:duration=1"]),
        ("video-only.mov", ["-i", "SAMPLE", "-c", "copy", "-an"]),
    ])
    func otherContainersMatchFFprobe(name: String, arguments: [String]) throws {
        let folder = try TemporaryFolder("containers")
        let directory = folder.url
        defer { folder.remove() }
        let path = directory.appendingPathComponent(name).path
        let ffmpeg = try runTool(
            "ffmpeg",
            ["-hide_banner", "-loglevel", "error", "-y"]
                + arguments.map { $0 == "SAMPLE" ? Samples.good("located.mov") : $0 } + [path])
        try #require(ffmpeg.status == 0)
        try Self.compareWithFFprobe(path)
    }

    static func compareWithFFprobe(_ path: String) throws {
        let oracle = try #require(FFprobeOracle.probe(path))
        let result = try Prober.probe(path: path, timeout: 10)
        let format = try #require(oracle["format"] as? [String: Any])
        let streams = try #require(oracle["streams"] as? [[String: Any]])

        #expect(result.streams.count == streams.count)
        if result.content.isTimedMedia {
            let expected = try #require((format["duration"] as? String).flatMap(Double.init))
            let duration = try #require(result.duration)
            #expect(abs(duration - expected) <= 0.001, "duration \(duration) vs ffprobe \(expected)")
        }
        if let size = (format["size"] as? String).flatMap(Int64.init) { #expect(result.size == size) }
        for (mine, theirs) in zip(result.streams, streams) {
            #expect(mine.codecType == theirs["codec_type"] as? String)
            #expect(mine.codecName == theirs["codec_name"] as? String)
            if mine.codecType == "video" {
                #expect(mine.width == theirs["width"] as? Int)
                #expect(mine.height == theirs["height"] as? Int)
            }
            if mine.codecType == "audio" {
                #expect(mine.sampleRate == (theirs["sample_rate"] as? String).flatMap(Int.init))
                #expect(mine.channels == theirs["channels"] as? Int)
                #expect(mine.channelLayout == theirs["channel_layout"] as? String)
            }
            if result.content.isTimedMedia, let profile = theirs["profile"] as? String {
                #expect(mine.profile == profile)
            }
            #expect(mine.rotation == Self.rotation(theirs), "rotation of stream \(mine.index)")
        }
        if let tags = format["tags"] as? [String: Any] {
            #expect(result.creationTime == tags["creation_time"] as? String)
        }
    }

    /// ffprobe 5.1 prints a display matrix's rotation in side_data_list; older muxers' `rotate` tag is clockwise.
    static func rotation(_ stream: [String: Any]) -> Double? {
        if let sideData = stream["side_data_list"] as? [[String: Any]] {
            for entry in sideData { if let rotation = entry["rotation"] as? Double { return rotation } }
            for entry in sideData { if let rotation = entry["rotation"] as? Int { return Double(rotation) } }
        }
        if let tags = stream["tags"] as? [String: Any], let rotate = (tags["rotate"] as? String).flatMap(Double.init) {
            return -rotate
        }
        return nil
    }

    @Test func portraitClipHasRotation() throws {
        let result = try Prober.probe(path: Samples.good("portrait.mov"), timeout: 10)
        let video = try #require(result.videoStreams.first)
        #expect(video.rotation.map(abs) == 90)
        #expect(video.width == 160)
        #expect(video.height == 120)
    }

    @Test func locatedClipIsInStockholm() throws {
        let result = try Prober.probe(path: Samples.good("located.mov"), timeout: 10)
        let location = try #require(result.location)
        #expect(abs(location.latitude - 59.3293) < 1e-4)
        #expect(abs(location.longitude - 18.0686) < 1e-4)
        #expect(location.altitude == 12)
        #expect(result.creationTime == "2024-05-01T12:34:56.000000Z")
        #expect(result.formatName == "mov,mp4,m4a,3gp,3g2,mj2")
        #expect(result.content == .quicktime)
        #expect(result.durationEstimated == false)
        #expect(result.videoStreams.first?.frameRate == 25)
        #expect(result.videoStreams.first?.profile != nil)
        #expect(result.audioStreams.first?.profile == "LC")
    }

    @Test func udtaLocationInDegreesAndMinutes() throws {
        let result = try Prober.probe(path: Samples.good("located-udta.mov"), timeout: 10)
        let location = try #require(result.location)
        #expect(abs(location.latitude - 59.3293) < 1e-4)
        #expect(abs(location.longitude - 18.0686) < 1e-4)
        #expect(location.altitude == nil)
    }

    @Test func plainClipHasNoLocation() throws {
        let result = try Prober.probe(path: Samples.good("plain.mov"), timeout: 10)
        #expect(result.location == nil)
        #expect(result.creationTime == nil)
        #expect(result.videoStreams.first?.rotation == nil)
    }

    @Test func voiceMemo() throws {
        let result = try Prober.probe(path: Samples.good("voice.m4a"), timeout: 10)
        #expect(result.content == .m4a)
        #expect(result.streams.count == 1)
        let audio = try #require(result.audioStreams.first)
        #expect(audio.codecName == "aac")
        #expect(audio.sampleRate == 44100)
        #expect(audio.channels == 1)
        #expect(audio.channelLayout == "mono")
        #expect(abs((result.duration ?? 0) - 1.5) < 0.05)
    }

    @Test func jpegOrientationAndGPS() throws {
        let result = try Prober.probe(path: Samples.good("photo.jpg"), timeout: 10)
        let image = try #require(result.image)
        #expect(image.width == 320)
        #expect(image.height == 240)
        #expect(image.orientation == 6)
        #expect(image.hasGPS)
        #expect(image.dateTimeOriginal == "2024:05:01 12:34:56")
        let location = try #require(result.location)
        #expect(abs(location.latitude - 59.3293) < 1e-4)
        #expect(abs(location.longitude - 18.0686) < 1e-4)
        #expect(location.altitude.map { abs($0 - 12) < 1e-6 } == true)
        #expect(result.duration == nil)
    }

    /// EXIF stores 122° 25' 9.84" W; summed in binary that is -122.41940000000001, which reached S3 metadata
    /// (`{{probe.location.longitude}}`) as written. What reports and templates show is rounded to 7 decimals.
    @Test func coordinatesPrintWithoutBinaryNoise() throws {
        let longitude = -(122 + 25.0 / 60 + 9.84 / 3600)
        try #require("\(longitude)" == "-122.41940000000001", "the sum is no longer noisy: pick another angle")
        let location = GeoLocation(latitude: 37 + 46.0 / 60 + 29.64 / 3600, longitude: longitude, altitude: 12)
        #expect(location.json.serialized() == #"{"latitude":37.7749,"longitude":-122.4194,"altitude":12}"#)
        #expect(location.longitude == longitude, "the exact value stays for the geohash")
        // 7 decimals are kept, the 8th rounds; the southern and western signs stay.
        let fine = GeoLocation(latitude: -33.86881234, longitude: 151.20930008).json
        #expect(fine.serialized() == #"{"latitude":-33.8688123,"longitude":151.2093001}"#)

        let item = Item(path: "/x.jpg", relativePath: "x.jpg", size: 1, root: "/", rootIndex: 0)
        item.facts["probe"] = .object(["location": location.json])
        let scope = TemplateScope(item: item, context: StageContext(settings: RunSettings()), stage: "upload")
        let template = try Template("{{probe.location.latitude}},{{probe.location.longitude}}")
        #expect(try template.render(scope) == "37.7749,-122.4194")
        // A JSON body keeps them numbers.
        #expect(
            try TemplateValue.text(try Template("{{probe.location.longitude}}")).render(scope) == .double(-122.4194))
    }

    @Test func pngWithoutExif() throws {
        let result = try Prober.probe(path: Samples.good("graphic.png"), timeout: 10)
        #expect(
            result.image == ImageInfo(width: 200, height: 150, orientation: 1, dateTimeOriginal: nil, hasGPS: false))
        #expect(result.location == nil)
    }

    @Test func heicDimensionsAndExif() throws {
        let result = try Prober.probe(path: Samples.good("photo.heic"), timeout: 10)
        #expect(result.content == .heif)
        #expect(result.formatName == "heif")
        let image = try #require(result.image)
        #expect(image.width == 320)
        #expect(image.height == 240)
        #expect(image.orientation == 6)
        #expect(image.hasGPS)
        #expect(image.dateTimeOriginal == "2024:05:01 12:34:56")
        #expect(result.location.map { abs($0.latitude - 59.3293) < 1e-4 && abs($0.longitude - 18.0686) < 1e-4 } == true)
    }

    // MARK: - Files that must be refused

    func rule(_ path: String, timeout: Double = 10) -> (rule: String, message: String)? {
        do {
            _ = try Prober.probe(path: path, timeout: timeout)
            return nil
        } catch let error as ProbeError {
            return (error.rule.rawValue, error.message)
        } catch {
            return ("unexpected \(type(of: error))", "\(error)")
        }
    }

    @Test func truncatedMovIsCorruptWithFFmpegsReason() throws {
        let failed = try #require(rule(Samples.bad("truncated.mov")))
        #expect(failed.rule == "corrupt")
        #expect(failed.message.contains("moov atom not found"))
        #expect(failed.message.contains("Invalid data found when processing input"))
    }

    @Test func emptyFile() throws {
        #expect(rule(Samples.bad("empty.mov"))?.rule == "unsupported")
    }

    @Test func playlistNamedMovIsUnsafe() throws {
        let failed = try #require(rule(Samples.bad("playlist.mov")))
        #expect(failed.rule == "unsafe")
        #expect(failed.message.contains("HLS playlist"))
    }

    @Test func concatListNamedMovIsUnsafe() throws {
        let folder = try TemporaryFolder("concat")
        let directory = folder.url
        defer { folder.remove() }
        let path = directory.appendingPathComponent("joined.mov").path
        let list = "ffconcat version 1.0\nfile '\(Samples.good("plain.mov"))'\nfile '/etc/passwd'\n"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(list.utf8)))
        let failed = try #require(rule(path))
        #expect(failed.rule == "unsafe")
        #expect(failed.message.contains("concat list"))
    }

    @Test func jpegNamedMovIsProbedAsWhatItIs() throws {
        // The probe goes by content; the validate stage is what flags the extension.
        let result = try Prober.probe(path: Samples.bad("photo-named.mov"), timeout: 10)
        #expect(result.content == .jpeg)
        #expect(result.image?.orientation == 6)
    }

    @Test func unknownContentIsUnsupported() throws {
        let folder = try TemporaryFolder("unknown")
        let directory = folder.url
        defer { folder.remove() }
        let path = directory.appendingPathComponent("notes.mov").path
        #expect(FileManager.default.createFile(atPath: path, contents: Data("just some text\n".utf8)))
        #expect(rule(path)?.rule == "unsupported")
    }

    @Test func vanishedFileIsUnreadable() throws {
        let folder = try TemporaryFolder("vanished")
        let directory = folder.url
        let path = directory.appendingPathComponent("gone.mov").path
        try FileManager.default.copyItem(atPath: Samples.good("plain.mov"), toPath: path)
        try FileManager.default.removeItem(at: directory)
        let failed = try #require(rule(path))
        #expect(failed.rule == "unreadable")
        #expect(failed.message.contains("no such file"))
    }

    @Test func directoryNamedMovIsUnreadable() throws {
        let folder = try TemporaryFolder("dir")
        let directory = folder.url
        defer { folder.remove() }
        let path = directory.appendingPathComponent("x.mov").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let failed = try #require(rule(path))
        #expect(failed.rule == "unreadable")
        #expect(failed.message.contains("directory"))
    }

    /// Root reads any file whatever its mode, so the check only means something for other users.
    @Test(.enabled(if: getuid() != 0, "running as root: permissions do not stop root from reading"))
    func permissionDeniedIsUnreadable() throws {
        let folder = try TemporaryFolder("perm")
        let directory = folder.url
        defer { folder.remove() }
        let path = directory.appendingPathComponent("locked.mov").path
        try FileManager.default.copyItem(atPath: Samples.good("plain.mov"), toPath: path)
        chmod(path, 0)
        #expect(rule(path)?.rule == "unreadable")
    }

    @Test func deadlineInterruptsFFmpeg() throws {
        // One microsecond has passed long before FFmpeg's first read, so the interrupt callback fires.
        let failed = try #require(rule(Samples.good("plain.mov"), timeout: 0.000_001))
        #expect(failed.rule == "timeout")
    }

    @Test func truncatedCopyMadeHereIsCorrupt() throws {
        // Cut inside the moov atom of a faststart file: the header itself is broken, not just the media data.
        let folder = try TemporaryFolder("trunc")
        let directory = folder.url
        defer { folder.remove() }
        let faststart = directory.appendingPathComponent("fast.mov").path
        _ = try runTool(
            "ffmpeg",
            [
                "-hide_banner", "-loglevel", "error", "-y", "-i", Samples.good("plain.mov"), "-c", "copy", "-movflags",
                "+faststart", faststart,
            ])
        let handle = try #require(FileHandle(forReadingAtPath: faststart))
        let head = try handle.read(upToCount: 600) ?? Data()
        try handle.close()
        let cut = directory.appendingPathComponent("cut.mov").path
        #expect(FileManager.default.createFile(atPath: cut, contents: head))
        #expect(rule(cut)?.rule == "corrupt")
    }

    // MARK: - The crafted playlist

    @Test func craftedPlaylistMakesNoConnection() throws {
        let listener = try ConnectionCounter()
        let folder = try TemporaryFolder("hls")
        let directory = folder.url
        defer { folder.remove() }
        let path = directory.appendingPathComponent("holiday.mov").path
        let playlist = """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-TARGETDURATION:2
            #EXTINF:2.0,
            \(Samples.good("plain.mov"))
            #EXTINF:2.0,
            http://127.0.0.1:\(listener.port)/x.ts
            #EXT-X-ENDLIST

            """
        #expect(FileManager.default.createFile(atPath: path, contents: Data(playlist.utf8)))
        let failed = rule(path)
        let connections = listener.stop()
        #expect(failed?.rule == "unsafe")
        #expect(connections == 0)
    }

    // MARK: - Through the preflight pipeline

    /// The README demo: good samples pass preflight, each bad one fails with the rule that explains it.
    @Test func preflightPipelineOnSamples() throws {
        let pipelinePath = Samples.root.deletingLastPathComponent().appendingPathComponent("pipelines/preflight.yml")
        let pipeline = try Pipeline.load(path: pipelinePath.path, environment: [:])
        func failedRules(_ path: String) throws -> [String] {
            let item = Item.onDisk(path)
            for configured in pipeline.stages
            where !configured.usesNetwork && configured.condition?.matches(item) != false {
                let context = StageContext(settings: RunSettings(offline: true), resultName: configured.resultName)
                do {
                    _ = try configured.stage.run(item, context: context)
                } catch let failed as ItemFailed {
                    return failed.failures.map { "\($0.stage).\($0.rule)" }
                }
            }
            return []
        }
        for path in Samples.files(in: "good") {
            #expect(try failedRules(path) == [], "\(path)")
        }
        #expect(try failedRules(Samples.bad("empty.mov")) == ["validate.min_bytes"])
        #expect(try failedRules(Samples.bad("photo-named.mov")) == ["validate.content"])
        #expect(try failedRules(Samples.bad("playlist.mov")) == ["validate.content"])
        #expect(try failedRules(Samples.bad("truncated.mov")) == ["validate.corrupt"])
    }
}

/// ISO 6709 strings as phones and muxers write them.
@Suite struct ISO6709Tests {
    @Test(arguments: [
        ("+59.3293+018.0686+012.000/", 59.3293, 18.0686, 12.0 as Double?),
        ("+59.3293+018.0686/", 59.3293, 18.0686, nil),
        ("+5919.758+01804.116/", 59.3293, 18.0686, nil),
        ("+591945.48+0180406.96/", 59.3293, 18.0686, nil),
        ("-33.8688+151.2093+005.5/", -33.8688, 151.2093, 5.5),
        ("+40.7128-074.0060-010.000CRSWGS_84/", 40.7128, -74.0060, -10.0),
        ("+59.3293+018.0686", 59.3293, 18.0686, nil),
    ])
    func parses(text: String, latitude: Double, longitude: Double, altitude: Double?) throws {
        let location = try #require(ISO6709.parse(text))
        #expect(abs(location.latitude - latitude) < 1e-4)
        #expect(abs(location.longitude - longitude) < 1e-4)
        #expect(location.altitude == altitude)
    }

    @Test(arguments: ["", "/", "hello", "+59.3293", "+99.0+018.0/", "+59.0+181.0/", "+5975.0+01804.1/", "59.3+18.0/"])
    func rejects(text: String) {
        #expect(ISO6709.parse(text) == nil)
    }
}
