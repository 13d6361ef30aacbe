import Foundation
import IngestCore

/// ISO 6709 point strings as phones write them into QuickTime/MP4 metadata
/// (`com.apple.quicktime.location.ISO6709`, `©xyz`, Android's `location`):
/// `+59.3293+018.0686+012.000/`, and the degrees-minutes(-seconds) forms `+5919.758+01804.116/`,
/// `+591945.48+0180406.96/`. Latitude has 2 integer degree digits, longitude 3; an optional altitude in metres
/// follows; a `CRS…` suffix and the closing `/` are ignored.
package enum ISO6709 {
    /// The location in `text`, or nil when it is not a valid ISO 6709 point.
    package static func parse(_ text: String) -> GeoLocation? {
        var body = Substring(text.trimmingCharacters(in: .whitespacesAndNewlines))
        if let crs = body.range(of: "CRS") { body = body[..<crs.lowerBound] }
        while body.last == "/" { body.removeLast() }
        // Split into signed numbers: each starts with + or -.
        var parts: [Substring] = []
        var start: Substring.Index? = nil
        for index in body.indices {
            let character = body[index]
            if character == "+" || character == "-" {
                if let start { parts.append(body[start..<index]) }
                start = index
            } else if !(character.isASCII && (character.isNumber || character == ".")) || start == nil {
                return nil
            }
        }
        if let start { parts.append(body[start...]) }
        guard parts.count == 2 || parts.count == 3,
            let latitude = angle(parts[0], degreeDigits: 2, limit: 90),
            let longitude = angle(parts[1], degreeDigits: 3, limit: 180)
        else { return nil }
        var altitude: Double? = nil
        if parts.count == 3 {
            guard let value = Double(parts[2]), value.isFinite else { return nil }
            altitude = value
        }
        return GeoLocation(latitude: latitude, longitude: longitude, altitude: altitude)
    }

    /// `±D…[.d]`, `±D…MM[.m]` or `±D…MMSS[.s]`, told apart by the number of integer digits.
    private static func angle(_ part: Substring, degreeDigits: Int, limit: Double) -> Double? {
        guard let signCharacter = part.first else { return nil }
        let sign: Double = signCharacter == "-" ? -1 : 1
        let number = part.dropFirst()
        let integer = number.prefix { $0 != "." }
        let fraction = number.dropFirst(integer.count)
        guard !integer.isEmpty, fraction.isEmpty || fraction.count > 1, integer.allSatisfy(\.isNumber),
            fraction.dropFirst().allSatisfy(\.isNumber)
        else { return nil }
        let digits = Array(integer)
        let fractionValue = fraction.isEmpty ? 0 : Double("0" + fraction) ?? 0
        var degrees: Double
        switch digits.count {
        case ...degreeDigits:
            degrees = (Double(String(digits)) ?? 0) + fractionValue
        case degreeDigits + 2:
            let whole = Double(String(digits.prefix(degreeDigits))) ?? 0
            let minutes = (Double(String(digits.suffix(2))) ?? 0) + fractionValue
            guard minutes < 60 else { return nil }
            degrees = whole + minutes / 60
        case degreeDigits + 4:
            let whole = Double(String(digits.prefix(degreeDigits))) ?? 0
            let minutes = Double(String(digits[degreeDigits..<degreeDigits + 2])) ?? 0
            let seconds = (Double(String(digits.suffix(2))) ?? 0) + fractionValue
            guard minutes < 60, seconds < 60 else { return nil }
            degrees = whole + minutes / 60 + seconds / 3600
        default:
            return nil
        }
        guard degrees <= limit else { return nil }
        return sign * degrees
    }
}
