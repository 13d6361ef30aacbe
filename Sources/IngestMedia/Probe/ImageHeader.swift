import Foundation
import IngestCore
import NativeSystem

/// Width and height from a JPEG's frame header (SOF) or a PNG's IHDR, read by walking the file's segments in
/// small reads: the probe never decodes an image (FFmpeg's image demuxers would decode a whole photo just to
/// learn its size) and never reads more than the headers.
enum ImageHeader {
    struct Dimensions: Equatable {
        var width: Int
        var height: Int
    }

    /// Dimensions of the JPEG or PNG at `path`; throws `ProbeError` (rule `corrupt`) when the header is missing
    /// or broken, `unreadable` when the file cannot be read.
    static func dimensions(path: String, content: ContentKind) throws -> Dimensions {
        let handle: HeaderCursor
        do {
            handle = HeaderCursor(file: try ReadOnlyFile(path: path))
        } catch {
            throw ProbeError(rule: .unreadable, message: "cannot open for reading: \(error.reason)")
        }
        do {
            switch content {
            case .png: return try png(handle)
            case .jpeg: return try jpeg(handle)
            default: throw ProbeError(rule: .unsupported, message: "no header reader for \(content.displayName)")
            }
        } catch let error as ProbeError {
            throw error
        } catch let error as SystemError {
            throw ProbeError(rule: .unreadable, message: "cannot read: \(error.reason)")
        }
    }

    private static func read(_ handle: HeaderCursor, _ count: Int) throws -> [UInt8] {
        try handle.read(count)
    }

    /// PNG: 8-byte signature, then the IHDR chunk (length, "IHDR", width, height as big-endian UInt32).
    private static func png(_ handle: HeaderCursor) throws -> Dimensions {
        let head = try read(handle, 24)
        guard head.count == 24, Array(head[12..<16]) == Array("IHDR".utf8) else {
            throw ProbeError(rule: .corrupt, message: "PNG has no IHDR header chunk")
        }
        let width = bigEndian(head[16..<20])
        let height = bigEndian(head[20..<24])
        guard width > 0, height > 0, width <= Int32.max, height <= Int32.max else {
            throw ProbeError(rule: .corrupt, message: "PNG header says \(width)×\(height)")
        }
        return Dimensions(width: width, height: height)
    }

    /// JPEG: SOI, then marker segments (FF xx, big-endian length) up to the first start-of-frame marker
    /// (C0–CF except DHT C4, JPG C8 and DAC CC), whose payload holds precision, height and width.
    private static func jpeg(_ handle: HeaderCursor) throws -> Dimensions {
        guard try read(handle, 2) == [0xFF, 0xD8] else {
            throw ProbeError(rule: .corrupt, message: "JPEG does not start with SOI")
        }
        var offset: UInt64 = 2
        // A JPEG's headers (EXIF, ICC, tables) come to at most a few hundred segments.
        for _ in 0..<1000 {
            var marker = try read(handle, 2)
            guard marker.count == 2, marker[0] == 0xFF else { break }
            // Fill bytes: FF may repeat before the marker code.
            while marker[1] == 0xFF {
                let next = try read(handle, 1)
                guard let byte = next.first else { break }
                marker[1] = byte
                offset += 1
            }
            let code = marker[1]
            if code == 0xD8 || code == 0x01 || (0xD0...0xD7).contains(code) {
                offset += 2
                continue
            }
            if code == 0xD9 || code == 0xDA { break }  // end of image or start of scan before any frame header
            let lengthBytes = try read(handle, 2)
            guard lengthBytes.count == 2 else { break }
            let length = Int(lengthBytes[0]) << 8 | Int(lengthBytes[1])
            guard length >= 2 else { break }
            if (0xC0...0xCF).contains(code), ![0xC4, 0xC8, 0xCC].contains(code) {
                let frame = try read(handle, 5)
                guard frame.count == 5 else { break }
                let height = Int(frame[1]) << 8 | Int(frame[2])
                let width = Int(frame[3]) << 8 | Int(frame[4])
                guard width > 0, height > 0 else {
                    throw ProbeError(rule: .corrupt, message: "JPEG frame header says \(width)×\(height)")
                }
                return Dimensions(width: width, height: height)
            }
            offset += 2 + UInt64(length)
            handle.offset = Int64(offset)
        }
        throw ProbeError(rule: .corrupt, message: "JPEG has no frame header (SOF) before its image data")
    }

    private static func bigEndian(_ bytes: ArraySlice<UInt8>) -> Int {
        bytes.reduce(0) { $0 << 8 | Int($1) }
    }
}

/// Reads on from where the last read ended (or from where `offset` was set), over a `ReadOnlyFile`.
private final class HeaderCursor {
    let file: ReadOnlyFile
    var offset: Int64 = 0

    init(file: ReadOnlyFile) { self.file = file }

    func read(_ count: Int) throws(SystemError) -> [UInt8] {
        let bytes = try file.read(at: offset, count: count)
        offset += Int64(bytes.count)
        return bytes
    }
}
