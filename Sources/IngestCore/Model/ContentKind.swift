import Foundation

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
    package var displayName: String {
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

    package var isImage: Bool { [.jpeg, .png, .heif, .gif, .webp].contains(self) }
    package var isTimedMedia: Bool {
        [.quicktime, .mp4, .m4a, .matroska, .webm, .wav, .mp3, .aac, .flac, .ogg].contains(self)
    }

    /// The contents an extension may hold; nil for extensions this tool has no opinion on.
    package static func accepted(forExtension ext: String) -> Set<ContentKind>? {
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
