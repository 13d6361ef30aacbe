import Foundation

/// A share written as `5%` (or a fraction such as `0.05`), e.g. the `jpeg` stage's `min_savings`.
package struct Percentage: OptionValue, Equatable, Sendable, CustomStringConvertible {
    /// 0…1.
    package var fraction: Double
    package init(fraction: Double) { self.fraction = fraction }

    package static func parse(_ text: String) -> Percentage? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasSuffix("%") {
            guard let value = Double(trimmed.dropLast().trimmingCharacters(in: .whitespaces)), (0...100).contains(value)
            else { return nil }
            return Percentage(fraction: value / 100)
        }
        guard let value = Double(trimmed), (0...1).contains(value) else { return nil }
        return Percentage(fraction: value)
    }

    package init(from node: ConfigNode) throws {
        guard let text = node.scalar, !node.isNull, let value = Percentage.parse(text) else {
            throw node.error("expected a percentage such as 5% (or a fraction 0…1), found \(node.kindDescription)")
        }
        self = value
    }

    package static var jsonSchema: JSONValue {
        [
            "anyOf": [
                ["type": "number", "minimum": 0, "maximum": 1],
                ["type": "string", "pattern": "^\\s*[0-9]+(\\.[0-9]+)?\\s*%\\s*$"],
            ]
        ]
    }

    package var description: String { "\(JSONValue.format((fraction * 1000).rounded() / 10))%" }
}
