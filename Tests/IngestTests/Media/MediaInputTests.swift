import Foundation
import NativeExif
import NativeFFmpeg
import NativeHEIF
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The native layer on its own: the probe guard, FFmpeg's error text, libexif and libheif.
@Suite struct MediaInputTests {
    /// Forces FFmpeg's HLS demuxer on a playlist whose segments are a local file and a listening local port: the
    /// guard must refuse the nested opens, and the port must see no connection.
    @Test func forcedHLSDemuxerIsContainedByTheGuard() throws {
        let listener = try ConnectionCounter()
        let folder = try TemporaryFolder("forced-hls")
        let directory = folder.url
        defer { folder.remove() }
        let path = directory.appendingPathComponent("list.m3u8").path
        let playlist = """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-TARGETDURATION:2
            #EXTINF:2.0,
            http://127.0.0.1:\(listener.port)/x.ts
            #EXTINF:2.0,
            \(Samples.good("plain.mov"))
            #EXT-X-ENDLIST

            """
        #expect(FileManager.default.createFile(atPath: path, contents: Data(playlist.utf8)))
        var refused = 0
        do {
            let input = try MediaInput(
                path: path, demuxer: .unrestricted("hls"), limits: MediaInputLimits(timeout: 5, streamInfo: .always))
            refused = input.refusedOpens
            // Whatever FFmpeg made of it, no segment was read.
            #expect(input.streams.allSatisfy { $0.codecName == nil || $0.duration == nil })
        } catch let error as MediaInputError {
            refused = error.refusedOpens
            #expect(!error.timedOut)
        }
        let connections = listener.stop()
        #expect(refused >= 1)
        #expect(connections == 0)
    }

    /// The listener really counts: without this, "0 connections" above could mean a deaf listener.
    @Test func listenerCountsConnections() throws {
        let listener = try ConnectionCounter()
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(fd >= 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = listener.port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        #expect(connected == 0)
        close(fd)
        // The accept happens on the listener's thread; give it a moment (bounded) before stopping.
        for _ in 0..<100 where listener.connections == 0 { usleep(10_000) }
        #expect(listener.stop() == 1)
    }

    @Test func allowListRefusesDangerousDemuxers() {
        #expect(Demuxer(name: "hls") == nil)
        #expect(Demuxer(name: "concat") == nil)
        #expect(Demuxer(name: "image2") == nil)
        #expect(Demuxer(name: "mp4") == .mov)
        #expect(Demuxer(name: "webm") == .matroska)
        #expect(Demuxer(name: "png_pipe") == .pngPipe)
    }

    @Test func unknownDemuxerNameFailsCleanly() throws {
        #expect(throws: MediaInputError.self) {
            try MediaInput(path: Samples.good("plain.mov"), demuxer: .unrestricted("no-such-demuxer"))
        }
    }

    @Test func wrongDemuxerKeepsFFmpegsText() throws {
        do {
            _ = try MediaInput(path: Samples.good("photo.jpg"), demuxer: .mov)
            Issue.record("a JPEG opened as mov")
        } catch let error as MediaInputError {
            #expect(error.error.call == "avformat_open_input")
            #expect(error.error.code == .invalidData)
            #expect(error.description.contains("Invalid data found when processing input"))
            #expect(error.refusedOpens == 0)
        }
    }

    @Test func headerOnlyOpenMatchesFullStreamInfo() throws {
        // The fast path (no avformat_find_stream_info on mov) must report what the full read reports.
        for name in ["located.mov", "portrait.mov", "voice.m4a"] {
            let fast = try MediaInput(path: Samples.good(name), demuxer: .mov)
            let full = try MediaInput(
                path: Samples.good(name), demuxer: .mov, limits: MediaInputLimits(streamInfo: .always))
            #expect(!fast.readStreamInfo, "\(name)")
            #expect(full.readStreamInfo)
            #expect(fast.duration == full.duration)
            #expect(fast.bitRate == full.bitRate, "\(name)")
            for (a, b) in zip(fast.streams, full.streams) {
                #expect(a.codecName == b.codecName)
                #expect(a.profile == b.profile, "\(name) stream \(a.index)")
                #expect(a.width == b.width)
                #expect(a.height == b.height)
                #expect(a.sampleRate == b.sampleRate)
                #expect(a.channels == b.channels)
                #expect(a.channelLayout == b.channelLayout, "\(name) stream \(a.index)")
                #expect(a.rotation == b.rotation)
                #expect(a.averageFrameRate == b.averageFrameRate)
                #expect(a.duration == b.duration)
            }
        }
    }

    @Test func errorCodesCarryFFmpegsText() {
        #expect(FFmpegErrorCode.invalidData.description == "Invalid data found when processing input")
        #expect(FFmpegErrorCode.endOfFile.description == "End of file")
        #expect(FFmpegErrorCode.tryAgain.description == "Resource temporarily unavailable")
        let error = FFmpegError(call: "av_read_frame", code: .endOfFile)
        #expect(error.description == "av_read_frame: End of file")
    }

    @Test func exifFromJPEGFile() throws {
        let exif = try #require(ExifData(jpegFileAt: Samples.good("photo.jpg")))
        #expect(exif.orientation == 6)
        #expect(exif.dateTimeOriginal == "2024:05:01 12:34:56")
        #expect(exif.hasGPS)
        #expect(exif.gpsLatitude.map { abs($0 - 59.3293) < 1e-4 } == true)
        #expect(exif.gpsLongitude.map { abs($0 - 18.0686) < 1e-4 } == true)
        #expect(exif.gpsAltitude == 12)
        #expect(ExifData(jpegFileAt: Samples.good("graphic.png")) == nil)
    }

    @Test func exifFromGarbageIsNil() {
        #expect(ExifData(blob: [1, 2, 3]) == nil)
        #expect(ExifData(heifExifItem: [0, 0, 0, 9, 1, 2]) == nil)
    }

    @Test func heifDecodesToRGB() throws {
        let image = try HEIFImage(path: Samples.good("photo.heic"))
        #expect(image.width == 320)
        #expect(image.height == 240)
        let pixels = try image.decodeInterleavedRGB()
        #expect(pixels.width == 320)
        #expect(pixels.height == 240)
        #expect(pixels.stride >= 320 * 3)
        #expect(pixels.bytes.count == pixels.stride * 240)
        // testsrc is colourful: not a blank frame.
        #expect(Set(pixels.bytes.prefix(pixels.stride)).count > 10)
        let item = try #require(try image.exifItem())
        #expect(ExifData(heifExifItem: item)?.orientation == 6)
    }

    @Test func heifErrorKeepsLibheifText() {
        do {
            _ = try HEIFImage(path: Samples.good("photo.jpg"))
            Issue.record("a JPEG opened as HEIF")
        } catch let error as HEIFError {
            #expect(error.call == "heif_context_read_from_file")
            #expect(!error.message.isEmpty)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}
