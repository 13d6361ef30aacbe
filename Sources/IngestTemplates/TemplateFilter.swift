import Foundation

/// A filter after a template variable: `first:N` and `last:N` keep that many characters, `lower` and `upper` change
/// case (`{{file.ext | lower}}` keys `IMG_1.JPG` as `.jpg`). `raw` changes no text: in a URL it sends the value as it
/// is instead of percent-encoded (`URLPlacement`).
enum TemplateFilter: Sendable, Equatable {
    case first(Int)
    case last(Int)
    case lower
    case upper
    case raw

    static let names = "first:N, last:N, lower, upper, raw"

    init(parsing text: String, in source: String) throws {
        let parts = text.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
        let count = parts.count == 2 ? Int(parts[1]) : nil
        switch (parts.first ?? "", count) {
        case ("first", let count?) where count > 0: self = .first(count)
        case ("last", let count?) where count > 0: self = .last(count)
        case ("lower", nil) where parts.count == 1: self = .lower
        case ("upper", nil) where parts.count == 1: self = .upper
        case ("raw", nil) where parts.count == 1: self = .raw
        default:
            throw TemplateSyntaxError(
                message: "'\(text.trimmingCharacters(in: .whitespaces))' in '\(source)' is not a filter; "
                    + "filters: \(Self.names) (N a positive whole number)")
        }
    }

    func apply(_ text: String) -> String {
        switch self {
        case .first(let count): return String(text.prefix(count))
        case .last(let count): return String(text.suffix(count))
        case .lower: return text.lowercased()
        case .upper: return text.uppercased()
        case .raw: return text
        }
    }
}
