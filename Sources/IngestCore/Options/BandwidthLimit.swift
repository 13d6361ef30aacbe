import Foundation

/// `--bwlimit` and the pipeline's `bwlimit:` in rclone's units: `8M` (8 MiB/s), `512k`, `1.5G`, `off`, a bare
/// number in KiB/s (`512` = 512 KiB/s, as rclone reads it), an optional `B`/`iB`/`/s` after the unit, or rclone's
/// timetable `"08:00,512k 19:00,off"` (from each local time on, until the next; before the first, the last one).
package struct BandwidthLimit: OptionValue, Sendable, Equatable, CustomStringConvertible {
    package var text: String
    package var schedule: BandwidthSchedule

    /// 1 KiB/s at least (below it a transfer would trickle into the low-speed limit), 100 GiB/s at most.
    static let slowest: Int64 = 1024
    static let fastest: Int64 = 100 << 30

    package init(parsing text: String) throws(BandwidthLimitError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let parts = trimmed.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard !parts.isEmpty else { throw BandwidthLimitError(text: text, why: "it is empty") }
        var entries: [BandwidthSchedule.Entry] = []
        if parts.count == 1, !parts[0].contains(",") {
            entries = [.init(minute: 0, bytesPerSecond: try Self.rate(parts[0], in: text))]
        } else {
            for part in parts {
                let fields = part.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
                guard fields.count == 2, let minute = Self.minute(fields[0]) else {
                    throw BandwidthLimitError(
                        text: text, why: "'\(part)' is not a timetable entry such as 08:00,512k or 19:00,off")
                }
                if entries.contains(where: { $0.minute == minute }) {
                    throw BandwidthLimitError(text: text, why: "\(fields[0]) appears twice")
                }
                entries.append(.init(minute: minute, bytesPerSecond: try Self.rate(fields[1], in: text)))
            }
        }
        self.text = trimmed
        schedule = BandwidthSchedule(entries: entries)
    }

    package init(from node: ConfigNode) throws {
        guard let scalar = node.scalar else {
            throw node.error("expected a rate such as 8M, 512k or off, found \(node.kindDescription)")
        }
        do { try self.init(parsing: scalar) } catch { throw node.error("bwlimit: \(error)") }
    }

    package static var jsonSchema: JSONValue {
        ["type": "string", "description": "rclone --bwlimit: 8M, 512k, off, or \"08:00,512k 19:00,off\""]
    }

    package var description: String { text }

    /// True when no entry caps anything (`off`).
    package var isOff: Bool { schedule.entries.allSatisfy { $0.bytesPerSecond == nil } }

    /// `HH:MM` → minutes after midnight.
    static func minute(_ text: String) -> Int? {
        let pieces = text.split(separator: ":", omittingEmptySubsequences: false)
        guard pieces.count == 2, pieces.allSatisfy({ (1...2).contains($0.count) && $0.allSatisfy(\.isASCII) }),
            let hour = Int(pieces[0]), let minute = Int(pieces[1]), (0..<24).contains(hour), (0..<60).contains(minute)
        else { return nil }
        return hour * 60 + minute
    }

    /// One rate: `off` → nil; `512`, `512k`, `8M`, `8MiB`, `8M/s`, `1.5G` → bytes per second (binary units).
    static func rate(_ word: String, in text: String) throws(BandwidthLimitError) -> Int64? {
        var unitText = word.lowercased()
        if unitText == "off" { return nil }
        if unitText.hasSuffix("/s") { unitText.removeLast(2) }
        // `8MiB` and `8MB` are `8M` (binary units, as rclone reads them); a bare `512b` stays bytes.
        if unitText.hasSuffix("ib") {
            unitText.removeLast(2)
        } else if unitText.hasSuffix("b"), unitText.dropLast().last?.isLetter == true {
            unitText.removeLast()
        }
        let factors: [Character: Double] = [
            "b": 1, "k": 1024, "m": 1_048_576, "g": 1_073_741_824, "t": 1_099_511_627_776,
        ]
        var factor = 1024.0
        if let last = unitText.last, let given = factors[last] {
            factor = given
            unitText.removeLast()
        }
        guard !unitText.isEmpty, unitText.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
            let value = Double(unitText), value.isFinite
        else {
            throw BandwidthLimitError(text: text, why: "'\(word)' is not a rate such as 8M, 512k, 1.5G or off")
        }
        let bytes = value * factor
        guard bytes >= Double(slowest) else {
            throw BandwidthLimitError(text: text, why: "'\(word)' is below 1 KiB/s (use off for no limit)")
        }
        guard bytes <= Double(fastest) else {
            throw BandwidthLimitError(text: text, why: "'\(word)' is above 100 GiB/s (use off for no limit)")
        }
        return Int64(bytes.rounded())
    }
}

/// Why a `--bwlimit` or `bwlimit:` value was refused.
package struct BandwidthLimitError: Error, Sendable, CustomStringConvertible {
    package var text: String
    package var why: String
    package var description: String {
        "'\(text)' is not a bandwidth limit: \(why) (rclone's units: 8M = 8 MiB/s, 512k, off, or \"08:00,512k 19:00,off\")"
    }
}
