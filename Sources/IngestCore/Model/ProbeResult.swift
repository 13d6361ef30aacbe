import Foundation

/// A point on Earth from ISO 6709 metadata or EXIF GPS.
public struct GeoLocation: Equatable, Sendable {
    /// Degrees north.
    public var latitude: Double
    /// Degrees east.
    public var longitude: Double
    /// Metres, when recorded.
    public var altitude: Double?

    /// A location.
    public init(latitude: Double, longitude: Double, altitude: Double? = nil) {
        self.latitude = latitude
        self.longitude = longitude
        self.altitude = altitude
    }

    /// Latitude and longitude rounded to 7 decimals (about 1 cm), as reports, `probe --json` and templates show
    /// them: EXIF's degrees, minutes and seconds summed in binary give `-122.41940000000001` for 122° 25' 9.84" W,
    /// which prints as `-122.4194` once rounded. The fields keep the exact values (the geohash is computed from
    /// them).
    public var json: JSONValue {
        var object: JSONObject = [
            "latitude": .double(Self.rounded(latitude)), "longitude": .double(Self.rounded(longitude)),
        ]
        if let altitude { object["altitude"] = .double(altitude) }
        return .object(object)
    }

    /// `degrees` to 7 decimal places (1e-7° is 1.1 cm, finer than any phone's GPS): the double nearest to that
    /// decimal, whose shortest round-tripping text has at most 7 places.
    static func rounded(_ degrees: Double) -> Double { (degrees * 1e7).rounded() / 1e7 }
}

/// One stream, with ffprobe's field names.
public struct StreamInfo: Equatable, Sendable {
    /// The stream's index in the container.
    public var index: Int
    /// `video`, `audio`, `subtitle`, `data` or `attachment`.
    public var codecType: String  // video, audio, subtitle, data, attachment
    /// FFmpeg's codec name (`h264`, `aac`).
    public var codecName: String?
    /// The codec profile (`High`).
    public var profile: String?
    /// Pixels, for video.
    public var width: Int?
    /// Pixels, for video.
    public var height: Int?
    /// Average frame rate in frames per second (ffprobe's avg_frame_rate as a number).
    public var frameRate: Double?
    /// Display-matrix rotation in degrees as ffprobe reports it (e.g. -90 for a portrait iPhone clip).
    public var rotation: Double?
    /// Hz, for audio.
    public var sampleRate: Int?
    /// Audio channels.
    public var channels: Int?
    /// `stereo`, `5.1` …
    public var channelLayout: String?
    /// The stream's language tag.
    public var language: String?
    /// Seconds, when known.
    public var duration: Double?
    /// Bits per second, when known.
    public var bitRate: Int64?

    /// A stream with only its index and type known.
    public init(index: Int, codecType: String) {
        self.index = index
        self.codecType = codecType
    }

    /// The value as reports and templates show it.
    public var json: JSONValue {
        var object: JSONObject = ["index": .int(Int64(index)), "codec_type": .string(codecType)]
        if let codecName { object["codec_name"] = .string(codecName) }
        if let profile { object["profile"] = .string(profile) }
        if let width { object["width"] = .int(Int64(width)) }
        if let height { object["height"] = .int(Int64(height)) }
        if let frameRate { object["frame_rate"] = .double((frameRate * 1000).rounded() / 1000) }
        if let rotation { object["rotation"] = .double(rotation) }
        if let sampleRate { object["sample_rate"] = .int(Int64(sampleRate)) }
        if let channels { object["channels"] = .int(Int64(channels)) }
        if let channelLayout { object["channel_layout"] = .string(channelLayout) }
        if let language { object["language"] = .string(language) }
        if let duration { object["duration"] = .double(duration) }
        if let bitRate { object["bit_rate"] = .int(bitRate) }
        return .object(object)
    }
}

/// Facts of a still image (JPEG, PNG, HEIC) read from its header and EXIF.
public struct ImageInfo: Equatable, Sendable {
    /// Pixels.
    public var width: Int
    /// Pixels.
    public var height: Int
    /// EXIF orientation 1…8 (1 when absent).
    public var orientation: Int
    /// EXIF DateTimeOriginal as written (`2024:05:01 12:34:56`).
    public var dateTimeOriginal: String?
    /// True when the EXIF holds a GPS position.
    public var hasGPS: Bool

    /// An image's header facts.
    public init(width: Int, height: Int, orientation: Int = 1, dateTimeOriginal: String? = nil, hasGPS: Bool = false) {
        self.width = width
        self.height = height
        self.orientation = orientation
        self.dateTimeOriginal = dateTimeOriginal
        self.hasGPS = hasGPS
    }
}

/// Everything the probe learns about one file.
public struct ProbeResult: Equatable, Sendable {
    /// What the magic bytes say the file is.
    public var content: ContentKind
    /// FFmpeg's demuxer name (`mov,mp4,m4a,3gp,3g2,mj2`, `jpeg_pipe` …) or `heif` for libheif.
    public var formatName: String
    /// Seconds; nil for stills.
    public var duration: Double?
    /// True when the container had no duration and it was derived from the streams.
    public var durationEstimated: Bool = false
    /// Bytes.
    public var size: Int64
    /// Bits per second, when known.
    public var bitRate: Int64?
    /// Every stream, in container order.
    public var streams: [StreamInfo] = []
    /// Container creation_time, ISO 8601 as written by the muxer.
    public var creationTime: String?
    /// Where it was recorded (ISO 6709 or EXIF GPS), when it says.
    public var location: GeoLocation?
    /// A photo's header facts.
    public var image: ImageInfo?
    /// Set when an ISO-BMFF file is shorter than its index and boxes say (a copy cut short); `validate` fails it.
    public var truncation: Truncation?

    /// A result with no streams yet.
    public init(content: ContentKind, formatName: String, size: Int64) {
        self.content = content
        self.formatName = formatName
        self.size = size
    }

    /// The video streams.
    public var videoStreams: [StreamInfo] { streams.filter { $0.codecType == "video" } }
    /// The audio streams.
    public var audioStreams: [StreamInfo] { streams.filter { $0.codecType == "audio" } }

    /// Width and height as displayed: the first video stream's (or the image's), not swapped for rotation.
    public var dimensions: (width: Int, height: Int)? {
        if let image { return (image.width, image.height) }
        if let video = videoStreams.first, let width = video.width, let height = video.height { return (width, height) }
        return nil
    }

    /// ffprobe-shaped JSON: `format{format_name,duration,size,bit_rate}`, `streams[]`, `location`, `orientation`;
    /// `format.missing_bytes` only for a file cut short.
    public var json: JSONObject {
        var format: JSONObject = ["format_name": .string(formatName)]
        if let duration { format["duration"] = .double(duration) }
        if durationEstimated { format["duration_estimated"] = true }
        format["size"] = .int(size)
        if let bitRate { format["bit_rate"] = .int(bitRate) }
        if let creationTime { format["creation_time"] = .string(creationTime) }
        if let truncation { format["missing_bytes"] = .int(truncation.missingBytes) }
        var object: JSONObject = [
            "content": .string(content.rawValue), "format": .object(format), "streams": .array(streams.map(\.json)),
        ]
        if let location { object["location"] = location.json }
        if let image {
            object["width"] = .int(Int64(image.width))
            object["height"] = .int(Int64(image.height))
            object["orientation"] = .int(Int64(image.orientation))
            if let date = image.dateTimeOriginal { object["date_time_original"] = .string(date) }
            object["has_gps"] = .bool(image.hasGPS)
        }
        return object
    }
}

/// Why a file could not be probed; `rule` names it for reports (`unreadable`, `corrupt`, `timeout`, `unsafe`).
public struct ProbeError: Error, Sendable, CustomStringConvertible {
    /// `unreadable`, `corrupt`, `timeout`, `unsafe` or `unsupported`.
    public var rule: RuleName
    /// What FFmpeg or the sniffer said.
    public var message: String
    /// A probe failure.
    public init(rule: RuleName, message: String) {
        self.rule = rule
        self.message = message
    }
    /// The message.
    public var description: String { message }
}
