import Foundation
import IngestNative

/// What a file is by its first bytes, whatever its name says. Validation compares it with the extension, and
/// the probe only hands FFmpeg the one demuxer that fits, so a playlist renamed `.mov` never reaches HLS.
public enum ContentKind: String, Sendable, CaseIterable {
    case jpeg, png, heif, gif, webp
    case quicktime, mp4, m4a, matroska, webm
    case wav, mp3, aac, flac, ogg
    case hlsPlaylist = "hls-playlist"
    case concatList = "concat-list"
    case empty, unknown

    /// Name for messages ("content is JPEG, extension says .mov").
    public var displayName: String {
        switch self {
        case .jpeg: "JPEG"
        case .png: "PNG"
        case .heif: "HEIF"
        case .gif: "GIF"
        case .webp: "WebP"
        case .quicktime: "QuickTime"
        case .mp4: "MP4"
        case .m4a: "M4A"
        case .matroska: "Matroska"
        case .webm: "WebM"
        case .wav: "WAV"
        case .mp3: "MP3"
        case .aac: "AAC (ADTS)"
        case .flac: "FLAC"
        case .ogg: "Ogg"
        case .hlsPlaylist: "an HLS playlist"
        case .concatList: "an FFmpeg concat list"
        case .empty: "empty"
        case .unknown: "unrecognised"
        }
    }

    public var isImage: Bool { [.jpeg, .png, .heif, .gif, .webp].contains(self) }
    public var isTimedMedia: Bool {
        [.quicktime, .mp4, .m4a, .matroska, .webm, .wav, .mp3, .aac, .flac, .ogg].contains(self)
    }

    /// The contents an extension may hold; nil for extensions this tool has no opinion on.
    public static func accepted(forExtension ext: String) -> Set<ContentKind>? {
        switch ext.lowercased() {
        case "mov", "qt": [.quicktime, .mp4]
        case "mp4", "m4v": [.mp4, .quicktime]
        case "m4a", "m4b": [.m4a, .mp4]
        case "3gp", "3g2": [.mp4]
        case "mkv": [.matroska, .webm]
        case "webm": [.webm, .matroska]
        case "wav": [.wav]
        case "mp3": [.mp3]
        case "aac": [.aac]
        case "flac": [.flac]
        case "ogg", "oga", "opus": [.ogg]
        case "jpg", "jpeg", "jpe": [.jpeg]
        case "png": [.png]
        case "heic", "heif", "hif": [.heif]
        case "gif": [.gif]
        case "webp": [.webp]
        default: nil
        }
    }
}

public enum Sniffer {
    /// Reads the first bytes of `path` and names the content. Throws `ProbeError` (rule `unreadable`) when the
    /// file cannot be opened or read.
    public static func sniff(path: String) throws -> ContentKind {
        // A folder or FIFO named like a movie must not be read: a FIFO's read could block forever.
        if let status = try? FileStatus(path: path, followLinks: true), status.kind != .regular {
            let what = status.kind == .directory ? "a directory" : "not a regular file"
            throw ProbeError(rule: .unreadable, message: "\(what), not a media file")
        }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw ProbeError(rule: .unreadable, message: "cannot open for reading: \(describeOpenFailure(path))")
        }
        defer { try? handle.close() }
        let head: Data
        do {
            head = try handle.read(upToCount: 64) ?? Data()
        } catch {
            throw ProbeError(rule: .unreadable, message: "cannot read: \(error.localizedDescription)")
        }
        return sniff(header: [UInt8](head))
    }

    /// Names the content of a header (the first 64 bytes, or fewer for a short file).
    public static func sniff(header bytes: [UInt8]) -> ContentKind {
        if bytes.isEmpty { return .empty }
        func starts(_ prefix: [UInt8], at offset: Int = 0) -> Bool {
            bytes.count >= offset + prefix.count && Array(bytes[offset..<offset + prefix.count]) == prefix
        }
        func ascii(_ text: String, at offset: Int = 0) -> Bool { starts(Array(text.utf8), at: offset) }

        if starts([0xFF, 0xD8, 0xFF]) { return .jpeg }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if ascii("GIF87a") || ascii("GIF89a") { return .gif }
        if ascii("RIFF"), ascii("WEBP", at: 8) { return .webp }
        if ascii("RIFF"), ascii("WAVE", at: 8) { return .wav }
        if ascii("fLaC") { return .flac }
        if ascii("OggS") { return .ogg }
        if starts([0x1A, 0x45, 0xDF, 0xA3]) {
            return bytes.count >= 40 && String(decoding: bytes.prefix(64), as: UTF8.self).contains("webm")
                ? .webm : .matroska
        }
        if ascii("ftyp", at: 4), bytes.count >= 12 {
            let brand = String(decoding: bytes[8..<12], as: UTF8.self)
            switch brand {
            case "qt  ": return .quicktime
            case "M4A ", "M4B ", "M4P ": return .m4a
            case "heic", "heix", "hevc", "hevx", "heim", "heis", "mif1", "msf1", "avif", "avis": return .heif
            default: return .mp4
            }
        }
        for atom in ["moov", "mdat", "wide", "free", "skip", "pnot"] where ascii(atom, at: 4) { return .quicktime }
        let text = String(decoding: bytes.drop(while: { $0 == 0xEF || $0 == 0xBB || $0 == 0xBF }), as: UTF8.self)
        let trimmed = text.drop(while: { $0.isWhitespace })
        if trimmed.hasPrefix("#EXTM3U") { return .hlsPlaylist }
        if trimmed.hasPrefix("ffconcat") || trimmed.hasPrefix("file ") || trimmed.hasPrefix("file\t") {
            return .concatList
        }
        if ascii("ID3") { return .mp3 }
        if bytes.count >= 2, bytes[0] == 0xFF, bytes[1] & 0xE0 == 0xE0 {
            let layer = (bytes[1] >> 1) & 0x3
            return layer == 0 ? .aac : .mp3
        }
        return .unknown
    }

    /// "permission denied", "no such file" … from errno after a failed open.
    static func describeOpenFailure(_ path: String) -> String {
        FileSystem.openFailure(path)?.reason ?? "unknown error"
    }
}
