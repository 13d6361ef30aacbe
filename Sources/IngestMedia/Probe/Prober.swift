import Foundation
import IngestCore
import NativeExif
import NativeFFmpeg
import NativeHEIF
import NativeSystem

/// Probes one file in-process: the magic bytes pick the reader, and only single-file formats reach a library.
///
/// - Timed media: libavformat (`MediaInput`) with the one demuxer that fits the sniffed content, the probe guard
///   (no second open, a deadline) and bounded probing; for mov/mp4 no frame is decoded when the header has it all.
/// - JPEG/PNG: dimensions from the header, EXIF through libexif. HEIC: libheif, its Exif item through libexif.
/// - Playlists and concat lists are refused (`unsafe`) and unknown content is `unsupported`, before any library
///   sees them.
public enum Prober {
    /// Metadata keys that hold an ISO 6709 location, most specific first.
    static let locationKeys = ["com.apple.quicktime.location.ISO6709", "location", "location-eng", "©xyz"]

    /// Probes `path`, giving FFmpeg at most `timeout` seconds. Throws `ProbeError` with rule `unreadable`,
    /// `corrupt`, `timeout`, `unsafe` or `unsupported`.
    ///
    /// - Parameters:
    ///   - path: The file.
    ///   - timeout: Seconds FFmpeg may take before it is interrupted.
    /// - Returns: Its kind, container, streams, duration and location.
    /// - Throws: `ProbeError`.
    public static func probe(path: String, timeout: Double) throws -> ProbeResult {
        let size = try regularFileSize(path)
        let content = try Sniffer.sniff(path: path)
        switch content {
        case .empty:
            throw ProbeError(rule: .unsupported, message: "file is empty")
        case .hlsPlaylist, .concatList:
            throw ProbeError(
                rule: .unsafe,
                message: "content is \(content.displayName), which may reference other files or URLs; not opened")
        case .unknown:
            throw ProbeError(rule: .unsupported, message: "content is not a recognised media format")
        case .jpeg, .png:
            return try probeStill(path: path, content: content, size: size)
        case .heif:
            return try probeHEIF(path: path, size: size)
        case .gif, .webp, .quicktime, .mp4, .m4a, .matroska, .webm, .wav, .mp3, .aac, .flac, .ogg:
            return try probeMedia(path: path, content: content, size: size, timeout: timeout)
        }
    }

    /// The size from `stat`; anything but a regular file (a directory, a FIFO that would block, a device) is
    /// `unreadable` before it is opened.
    static func regularFileSize(_ path: String) throws -> Int64 {
        let status: FileStatus
        do {
            status = try FileStatus(path: path, followLinks: true)
        } catch {
            throw ProbeError(rule: .unreadable, message: "cannot stat: \(error.reason)")
        }
        guard status.kind == .regular else {
            let what = status.kind == .directory ? "a directory" : "not a regular file"
            throw ProbeError(rule: .unreadable, message: "cannot probe: the path is \(what)")
        }
        return status.size
    }

    // MARK: - Timed media (libavformat)

    package static func demuxer(for content: ContentKind) -> Demuxer? {
        switch content {
        case .quicktime, .mp4, .m4a: .mov
        case .matroska, .webm: .matroska
        case .wav: .wav
        case .mp3: .mp3
        case .aac: .aac
        case .flac: .flac
        case .ogg: .ogg
        case .gif: .gifPipe
        case .webp: .webpPipe
        default: nil
        }
    }

    static func probeMedia(path: String, content: ContentKind, size: Int64, timeout: Double) throws -> ProbeResult {
        guard let demuxer = demuxer(for: content) else {
            throw ProbeError(rule: .unsupported, message: "no demuxer for \(content.displayName)")
        }
        // The mov header carries codecs, dimensions, sample rates and durations: no decoding needed. Other
        // containers (MP3/ADTS durations, WebP sizes) need avformat_find_stream_info as ffprobe runs it.
        let limits = MediaInputLimits(
            timeout: timeout, probeSize: 1 << 20, analyzeDuration: 1,
            streamInfo: demuxer == .mov ? .whenIncomplete : .always)
        let input: MediaInput
        do {
            input = try MediaInput(path: path, demuxer: demuxer, limits: limits)
        } catch let error as MediaInputError {
            throw probeError(error, timeout: timeout)
        }

        var result = ProbeResult(content: content, formatName: input.formatName, size: size)
        result.bitRate = input.bitRate
        result.streams = input.streams.map(streamInfo)
        if let duration = input.duration {
            result.duration = duration
        } else if let longest = input.streams.compactMap(\.duration).max() {
            result.duration = longest
            result.durationEstimated = true
        }
        result.creationTime =
            input.metadata["creation_time"] ?? input.streams.lazy.compactMap { $0.metadata["creation_time"] }.first
        result.location = location(in: input.metadata)
        if demuxer == .mov {
            result.truncation = Completeness.check(path: path, size: size, indexEnd: input.indexEnd)
        }
        if content == .gif || content == .webp, let video = result.videoStreams.first, let width = video.width,
            let height = video.height
        {
            result.image = ImageInfo(width: width, height: height)
            if content == .webp { result.duration = nil }
        }
        return result
    }

    package static func probeError(_ error: MediaInputError, timeout: Double) -> ProbeError {
        if error.timedOut {
            return ProbeError(rule: .timeout, message: "probe did not finish within \(timeout)s (\(error.error.call))")
        }
        if error.error.code == .noSuchFile || error.error.code == .permissionDenied {
            return ProbeError(rule: .unreadable, message: "cannot open: \(error.error.message.lowercased())")
        }
        if error.refusedOpens > 0 {
            return ProbeError(
                rule: .unsafe, message: "the file tried to open other files or URLs, which was refused (\(error))")
        }
        return ProbeError(rule: .corrupt, message: "FFmpeg cannot read the file: \(error)")
    }

    package static func streamInfo(_ stream: MediaStreamInfo) -> StreamInfo {
        var info = StreamInfo(index: stream.index, codecType: stream.codecType)
        info.codecName = stream.codecName
        info.profile = stream.profile
        info.width = stream.width
        info.height = stream.height
        info.frameRate = stream.averageFrameRate
        info.rotation = stream.rotation
        info.sampleRate = stream.sampleRate
        info.channels = stream.channels
        info.channelLayout = stream.channelLayout
        info.language = stream.language
        info.duration = stream.duration
        info.bitRate = stream.bitRate
        return info
    }

    /// The first parsable ISO 6709 location among the usual keys (exact, then case-insensitive).
    package static func location(in metadata: [String: String]) -> GeoLocation? {
        for key in locationKeys {
            let value = metadata[key] ?? metadata.first { $0.key.lowercased() == key.lowercased() }?.value
            if let value, let location = ISO6709.parse(value) { return location }
        }
        return nil
    }

    // MARK: - Stills

    static func probeStill(path: String, content: ContentKind, size: Int64) throws -> ProbeResult {
        let dimensions = try ImageHeader.dimensions(path: path, content: content)
        var result = ProbeResult(
            content: content, formatName: content == .jpeg ? "jpeg_pipe" : "png_pipe", size: size)
        var stream = StreamInfo(index: 0, codecType: "video")
        stream.codecName = content == .jpeg ? "mjpeg" : "png"
        stream.width = dimensions.width
        stream.height = dimensions.height
        result.streams = [stream]
        var image = ImageInfo(width: dimensions.width, height: dimensions.height)
        if content == .jpeg, let exif = ExifData(jpegFileAt: path) {
            apply(exif, to: &image, result: &result)
        }
        result.image = image
        return result
    }

    static func probeHEIF(path: String, size: Int64) throws -> ProbeResult {
        let heif: HEIFImage
        do {
            heif = try HEIFImage(path: path)
        } catch let error as HEIFError {
            throw ProbeError(rule: .corrupt, message: "libheif cannot read the file: \(error)")
        }
        var result = ProbeResult(content: .heif, formatName: "heif", size: size)
        result.truncation = Completeness.check(path: path, size: size, indexEnd: nil)
        var image = ImageInfo(width: heif.width, height: heif.height)
        if let item = try? heif.exifItem(), let exif = ExifData(heifExifItem: item) {
            apply(exif, to: &image, result: &result)
        }
        result.image = image
        return result
    }

    static func apply(_ exif: ExifData, to image: inout ImageInfo, result: inout ProbeResult) {
        image.orientation = exif.orientation ?? 1
        image.dateTimeOriginal = exif.dateTimeOriginal
        if let latitude = exif.gpsLatitude, let longitude = exif.gpsLongitude, abs(latitude) <= 90,
            abs(longitude) <= 180
        {
            image.hasGPS = true
            result.location = GeoLocation(latitude: latitude, longitude: longitude, altitude: exif.gpsAltitude)
        }
    }
}
