import Foundation

/// A file that is shorter than its own structure says: a half-copied recording whose index (at the front, after
/// `+faststart`) is intact while its media data is not. FFmpeg opens such a file without complaint and a demuxer
/// ends it with a plain EOF, so it is told from the structure alone, without decoding.
public struct Truncation: Equatable, Sendable {
    /// Bytes the file would need to hold everything its index and boxes point at.
    public var neededBytes: Int64
    /// Bytes it has.
    public var size: Int64
    /// What runs past the end: `media data` (samples or the `mdat` box) or another box (`moov box`).
    public var part: String

    package init(neededBytes: Int64, size: Int64, part: String) {
        self.neededBytes = neededBytes
        self.size = size
        self.part = part
    }

    /// Bytes the file lacks.
    public var missingBytes: Int64 { neededBytes - size }

    /// "the file is cut short: its media data needs 1,234,567 bytes, the file has 1,000,000".
    public var message: String {
        "the file is cut short: its \(part) needs \(Self.grouped(neededBytes)) bytes, the file has \(Self.grouped(size))"
    }

    /// Digits in groups of three with commas, whatever the locale (byte counts read at a glance).
    static func grouped(_ value: Int64) -> String {
        let digits = String(value.magnitude)
        var result = ""
        for (offset, digit) in digits.enumerated() {
            if offset > 0, (digits.count - offset) % 3 == 0 { result.append(",") }
            result.append(digit)
        }
        return value < 0 ? "-" + result : result
    }
}
