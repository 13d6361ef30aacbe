import Foundation

// Every number a pipeline file holds is checked against a range when the file loads, so no stage ever does
// arithmetic on a value that can overflow or trap (a 99999999999999999999h duration, a concurrency of 2⁶³−1).

/// A value an option holds that has a range: a field's own (`OptionField(…, range:)`) or else the type's
/// `defaultRange`, the widest span the code that uses it handles.
package protocol RangedOptionValue: OptionValue, Comparable {
    static var defaultRange: ClosedRange<Self> { get }
    /// How a bound reads in messages (`1024`, `366d`, `1 PiB`).
    var rangeText: String { get }
    /// The type's schema with the range's bounds on its numeric form.
    static func jsonSchema(in range: ClosedRange<Self>) -> JSONValue
}

extension RangedOptionValue {
    static func describe(_ range: ClosedRange<Self>) -> String {
        "between \(range.lowerBound.rangeText) and \(range.upperBound.rangeText)"
    }

    /// Decodes the node and checks the range, naming the option. A value that does not even decode (an integer
    /// past 2⁶³, `inf`) gets the range appended, so the user learns what would be accepted.
    static func decode(_ node: ConfigNode, name: String, range: ClosedRange<Self>) throws -> Self {
        let value: Self
        do {
            value = try Self(from: node)
        } catch var error as PipelineFileError {
            // A list or mapping in place of a number is a shape mistake, not a number out of range.
            if node.scalar != nil && !node.isNull { error.message += "; \(name) must be \(describe(range))" }
            throw error
        }
        guard range.contains(value) else {
            throw node.error("\(name) must be \(describe(range)), found \(node.kindDescription)")
        }
        return value
    }
}

extension OptionField {
    /// A field whose value must lie in `range`, said with the option's name and place when it does not.
    package init<Value: RangedOptionValue>(
        _ name: String, _ keyPath: WritableKeyPath<Root, Value>, range: ClosedRange<Value>, doc: String,
        required: Bool = false, default defaultText: String? = nil
    ) {
        self.init(
            name: name, doc: doc, required: required, defaultText: defaultText,
            valueSchema: Value.jsonSchema(in: range),
            decode: { root, node in root[keyPath: keyPath] = try Value.decode(node, name: name, range: range) })
    }

    package init<Value: RangedOptionValue>(
        _ name: String, _ keyPath: WritableKeyPath<Root, Value?>, range: ClosedRange<Value>, doc: String,
        required: Bool = false, default defaultText: String? = nil
    ) {
        self.init(
            name: name, doc: doc, required: required, defaultText: defaultText,
            valueSchema: Value.jsonSchema(in: range),
            decode: { root, node in root[keyPath: keyPath] = try Value.decode(node, name: name, range: range) })
    }
}

/// Whole numbers: without a range of their own, 0 … 2³¹−1 (counts and pixel sizes; no product of two overflows).
extension Int: RangedOptionValue {
    package static var defaultRange: ClosedRange<Int> { 0...Int(Int32.max) }
    package var rangeText: String { "\(self)" }
    package static func jsonSchema(in range: ClosedRange<Int>) -> JSONValue {
        ["type": "integer", "minimum": .int(Int64(range.lowerBound)), "maximum": .int(Int64(range.upperBound))]
    }
}

extension Double: RangedOptionValue {
    package static var defaultRange: ClosedRange<Double> { 0...1e9 }
    package var rangeText: String { JSONValue.format(self) }
    package static func jsonSchema(in range: ClosedRange<Double>) -> JSONValue {
        ["type": "number", "minimum": .double(range.lowerBound), "maximum": .double(range.upperBound)]
    }
}

/// Sizes: up to 1 PiB, far past any file, and far from where byte arithmetic overflows.
extension ByteSize: RangedOptionValue {
    package static let maximum = ByteSize(bytes: 1 << 50)
    package static var defaultRange: ClosedRange<ByteSize> { ByteSize(bytes: 0)...maximum }
    package var rangeText: String { description }
    package static func jsonSchema(in range: ClosedRange<ByteSize>) -> JSONValue {
        [
            "anyOf": [
                ["type": "integer", "minimum": .int(range.lowerBound.bytes), "maximum": .int(range.upperBound.bytes)],
                sizePattern,
            ]
        ]
    }
}

/// Durations: up to 366 days, which every timer and clock conversion handles.
extension DurationValue: RangedOptionValue {
    package static let maximum = DurationValue(seconds: 366 * 86400)
    package static var defaultRange: ClosedRange<DurationValue> { DurationValue(seconds: 0)...maximum }
    package var rangeText: String {
        seconds >= 86400 && seconds.truncatingRemainder(dividingBy: 86400) == 0
            ? "\(Int(seconds / 86400))d" : description
    }
    package static func jsonSchema(in range: ClosedRange<DurationValue>) -> JSONValue {
        [
            "anyOf": [
                [
                    "type": "number", "minimum": .double(range.lowerBound.seconds),
                    "maximum": .double(range.upperBound.seconds),
                ],
                durationPattern,
            ]
        ]
    }
}

extension ConfigNode {
    /// Longest text an error message repeats from the file: a 20 MB scalar must not make a 20 MB line.
    static let echoLimit = 200

    /// `text` quoted, cut at `echoLimit` characters with its full length said, its control characters escaped (a
    /// newline or an escape sequence in a value must not break the message's line or the terminal).
    package static func echo(_ text: String) -> String {
        let visible = String(text.prefix(echoLimit)).unicodeScalars.map { scalar -> String in
            guard scalar.properties.generalCategory == .control else { return String(scalar) }
            return scalar.escaped(asASCII: true)
        }.joined()
        guard text.count > echoLimit else { return "'\(visible)'" }
        return "'\(visible)…' (\(text.count) characters)"
    }
}

extension OptionValue {
    /// Decodes a field's value, checking a ranged type against its `defaultRange`.
    static func decodeInDefaultRange(_ node: ConfigNode, name: String) throws -> Self {
        guard let ranged = Self.self as? any RangedOptionValue.Type,
            let value = try ranged.decodeInOwnDefaultRange(node, name: name) as? Self
        else { return try Self(from: node) }
        return value
    }

    static var schemaWithDefaultRange: JSONValue {
        (Self.self as? any RangedOptionValue.Type)?.defaultRangeSchema ?? jsonSchema
    }
}

extension RangedOptionValue {
    fileprivate static func decodeInOwnDefaultRange(_ node: ConfigNode, name: String) throws -> Any {
        try decode(node, name: name, range: defaultRange)
    }

    fileprivate static var defaultRangeSchema: JSONValue { jsonSchema(in: defaultRange) }
}

extension DurationValue {
    /// Limits on one network exchange (`connect_timeout`, a request's `timeout`): 1 ms to a day.
    package static let timeoutRange = DurationValue(seconds: 0.001)...DurationValue(seconds: 86400)
}

extension Percentage: Comparable, RangedOptionValue {
    package static func < (lhs: Percentage, rhs: Percentage) -> Bool { lhs.fraction < rhs.fraction }
    package static var defaultRange: ClosedRange<Percentage> { Percentage(fraction: 0)...Percentage(fraction: 1) }
    package var rangeText: String { description }
    package static func jsonSchema(in range: ClosedRange<Percentage>) -> JSONValue { jsonSchema }
}
