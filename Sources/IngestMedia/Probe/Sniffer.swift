import Foundation
import IngestCore
import NativeSystem

package enum Sniffer {
    /// Reads the first bytes of `path` and names the content. Throws `ProbeError` (rule `unreadable`) when the
    /// file cannot be opened or read.
    package static func sniff(path: String) throws -> ContentKind {
        // A folder or FIFO named like a movie must not be read: a FIFO's read could block forever.
        if let status = try? FileStatus(path: path, followLinks: true), status.kind != .regular {
            let what = status.kind == .directory ? "a directory" : "not a regular file"
            throw ProbeError(rule: .unreadable, message: "\(what), not a media file")
        }
        let file: ReadOnlyFile
        do {
            file = try ReadOnlyFile(path: path)
        } catch {
            throw ProbeError(rule: .unreadable, message: "cannot open for reading: \(error.reason)")
        }
        do {
            return sniff(header: try file.read(at: 0, count: 64))
        } catch {
            throw ProbeError(rule: .unreadable, message: "cannot read: \(error.reason)")
        }
    }

    /// Names the content of a header (the first 64 bytes, or fewer for a short file).
    package static func sniff(header bytes: [UInt8]) -> ContentKind {
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
}
