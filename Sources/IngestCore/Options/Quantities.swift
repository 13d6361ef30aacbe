import Foundation

/// A byte count written as `104857600`, `100MB` (10⁸ bytes), `100MiB` (100 × 2²⁰) or `1.5GB`.
package struct ByteSize: OptionValue, Equatable, Comparable, Sendable, CustomStringConvertible {
    package var bytes: Int64
    package init(bytes: Int64) { self.bytes = bytes }

    static let units: [(String, Double)] = [
        ("KiB", 1024), ("MiB", 1024 * 1024), ("GiB", 1024 * 1024 * 1024), ("TiB", 1024 * 1024 * 1024 * 1024),
        ("KB", 1e3), ("kB", 1e3), ("MB", 1e6), ("GB", 1e9), ("TB", 1e12), ("B", 1), ("K", 1024), ("M", 1024 * 1024),
        ("G", 1024 * 1024 * 1024),
    ]

    /// Parses the text forms; nil when it is not a size.
    package static func parse(_ text: String) -> ByteSize? {
        let trimmed = text.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "_", with: "")
        if let whole = Int64(trimmed), whole >= 0 { return ByteSize(bytes: whole) }
        // Past Int64: still a size, one that the range check refuses with the allowed span.
        if !trimmed.isEmpty, trimmed.allSatisfy(\.isASCII), trimmed.allSatisfy(\.isNumber) {
            return ByteSize(bytes: .max)
        }
        for (suffix, factor) in units where trimmed.hasSuffix(suffix) {
            let number = trimmed.dropLast(suffix.count).trimmingCharacters(in: .whitespaces)
            guard let value = Double(number), value >= 0, value.isFinite else { return nil }
            // Saturated rather than refused, so the range check can say what is allowed.
            return ByteSize(bytes: value * factor < 9.2e18 ? Int64((value * factor).rounded()) : .max)
        }
        return nil
    }

    package init(from node: ConfigNode) throws {
        guard let text = node.scalar, let size = ByteSize.parse(text) else {
            throw node.error("expected a size such as 104857600, 100MB or 100MiB, found \(node.kindDescription)")
        }
        self = size
    }

    package static var jsonSchema: JSONValue { ["anyOf": [["type": "integer", "minimum": 0], sizePattern]] }

    static let sizePattern: JSONValue = [
        "type": "string", "pattern": "^\\s*[0-9_]+(\\.[0-9]+)?\\s*(B|K|M|G|KB|kB|MB|GB|TB|KiB|MiB|GiB|TiB)?\\s*$",
    ]

    package static func < (lhs: ByteSize, rhs: ByteSize) -> Bool { lhs.bytes < rhs.bytes }

    /// Human form in binary units with the exact count for small values (`5 B`, `1.5 MiB`).
    package var description: String { ByteSize.format(bytes) }

    package static func format(_ bytes: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        if unit == 0 { return "\(bytes) B" }
        let rounded = (value * 10).rounded() / 10
        return rounded == rounded.rounded() ? "\(Int(rounded)) \(units[unit])" : "\(rounded) \(units[unit])"
    }
}

/// A span of time written as `3600` (seconds), `90s`, `1h30m`, `500ms` or `1.5s`.
package struct DurationValue: OptionValue, Equatable, Comparable, Sendable, CustomStringConvertible {
    package var seconds: Double
    package init(seconds: Double) { self.seconds = seconds }

    package static func parse(_ text: String) -> DurationValue? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let plain = Double(trimmed), plain.isFinite, plain >= 0 { return DurationValue(seconds: plain) }
        var total = 0.0
        var number = ""
        var index = trimmed.startIndex
        var sawUnit = false
        while index < trimmed.endIndex {
            let character = trimmed[index]
            if character.isNumber || character == "." {
                number.append(character)
                index = trimmed.index(after: index)
                continue
            }
            var unit = ""
            while index < trimmed.endIndex, trimmed[index].isLetter {
                unit.append(trimmed[index])
                index = trimmed.index(after: index)
            }
            guard let value = Double(number) else { return nil }
            let factor: Double
            switch unit {
            case "ms": factor = 0.001
            case "s": factor = 1
            case "m", "min": factor = 60
            case "h": factor = 3600
            case "d": factor = 86400
            default: return nil
            }
            total += value * factor
            number = ""
            sawUnit = true
        }
        // A huge total (even infinite) is still a duration: the range check refuses it with the allowed span.
        guard sawUnit, number.isEmpty, !total.isNaN else { return nil }
        return DurationValue(seconds: total)
    }

    package init(from node: ConfigNode) throws {
        guard let text = node.scalar, let duration = DurationValue.parse(text) else {
            throw node.error("expected a duration such as 3600, 90s or 1h30m, found \(node.kindDescription)")
        }
        self = duration
    }

    package static var jsonSchema: JSONValue { ["anyOf": [["type": "number", "minimum": 0], durationPattern]] }

    static let durationPattern: JSONValue = [
        "type": "string", "pattern": "^\\s*([0-9]+(\\.[0-9]+)?\\s*|([0-9]+(\\.[0-9]+)?(ms|s|m|min|h|d))+)\\s*$",
    ]

    package static func < (lhs: DurationValue, rhs: DurationValue) -> Bool { lhs.seconds < rhs.seconds }

    package var description: String {
        // Whole seconds print as an integer only where Int64 holds them; past that (never loaded) as a number.
        seconds == seconds.rounded() && abs(seconds) < 9e15
            ? "\(Int64(seconds))s" : "\(JSONValue.format((seconds * 1000).rounded() / 1000))s"
    }
}
