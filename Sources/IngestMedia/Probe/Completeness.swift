import Foundation
import IngestCore
import NativeSystem

/// The completeness checks for ISO-BMFF files (mov, mp4, m4a, 3gp, HEIF).
enum Completeness {
    /// The truncation of an opened ISO-BMFF file, nil when all is there: the furthest sample of any stream's index
    /// (`indexEnd`, nil when not opened with FFmpeg), and the top-level box that claims more than the file has.
    static func check(path: String, size: Int64, indexEnd: Int64?) -> Truncation? {
        var worst: Truncation? = nil
        if let indexEnd, indexEnd > size {
            worst = Truncation(neededBytes: indexEnd, size: size, part: "media data")
        }
        if let box = ISOBoxes.overrun(path: path, size: size), box.end > (worst?.neededBytes ?? size) {
            worst = Truncation(
                neededBytes: box.end, size: size, part: box.type == "mdat" ? "media data" : "\(box.type) box")
        }
        return worst
    }
}

/// The top-level boxes of an ISO-BMFF file (ISO/IEC 14496-12 §4.2): each header gives the box's size — 32 bits,
/// or 1 and then a 64-bit largesize, or 0 for "to the end of the file" — and its four-character type. Only the
/// headers are read (one small read per box), never the boxes.
enum ISOBoxes {
    /// Boxes looked at before giving up: real files have a handful; a file of millions of tiny boxes must not
    /// cost millions of reads.
    static let maxBoxes = 4096

    /// A box that claims to end past the end of the file.
    struct Overrun: Equatable {
        var type: String
        /// Where the box says it ends.
        var end: Int64
    }

    /// The first top-level box that claims to end past `size`, with where it would end; nil when every box fits
    /// or the structure stops being readable as boxes (a malformed header is the demuxer's to judge, not a sign
    /// of a cut).
    static func overrun(path: String, size: Int64) -> Overrun? {
        guard let file = try? ReadOnlyFile(path: path) else { return nil }
        var offset: Int64 = 0
        for _ in 0..<maxBoxes {
            guard size - offset >= 8, let header = try? file.read(at: offset, count: 16),
                let box = parse(header)
            else { return nil }
            guard let length = box.length else { return nil }  // size 0: the box runs to the end of the file
            if length > size - offset { return Overrun(type: box.type, end: offset &+ length) }
            offset += length
        }
        return nil
    }

    /// A box header's type and length (nil length: to the end of the file); nil when it is not a box header.
    static func parse(_ header: [UInt8]) -> (type: String, length: Int64?)? {
        guard header.count >= 8 else { return nil }
        let typeBytes = header[4..<8]
        // Real box types are four printable characters (© counts: QuickTime's metadata atoms use it).
        guard typeBytes.allSatisfy({ (0x20...0x7E).contains($0) || $0 == 0xA9 }) else { return nil }
        let type = String(typeBytes.map { Character(Unicode.Scalar($0)) })
        let size32 = header[0..<4].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        switch size32 {
        case 0:
            return (type, nil)
        case 1:
            guard header.count >= 16 else { return nil }
            let large = header[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            guard large >= 16, large <= UInt64(Int64.max) else { return nil }
            return (type, Int64(large))
        case 2..<8:
            return nil
        default:
            return (type, Int64(size32))
        }
    }
}
