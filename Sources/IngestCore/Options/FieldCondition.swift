import Foundation

/// A condition on a JSON answer: dotted field paths and the values each may have
/// (`fields.status: [completed, failed]`, or one value). It holds when every field named has one of its values,
/// compared as text (`100` matches the number 100).
package struct FieldCondition: OptionValue, Sendable, Equatable, CustomStringConvertible {
    package struct Entry: Sendable, Equatable {
        package var path: String
        package var values: [String]
    }
    package var entries: [Entry] = []
    package init() {}

    package init(from node: ConfigNode) throws {
        let what = "answer fields to the values that end the wait (fields.status: [completed, failed])"
        entries = try node.mappingPairs(of: what, nonEmpty: true).map { pair in
            let path = try String(from: pair.key)
            if path.isEmpty || path.split(separator: ".", omittingEmptySubsequences: false).contains(where: \.isEmpty) {
                throw pair.key.error("'\(path)' is not a dotted field path such as fields.status")
            }
            let values: [String]
            if case .sequence(let items) = pair.value.kind {
                values = try items.map { try String(from: $0) }
            } else {
                values = [try String(from: pair.value)]
            }
            if values.isEmpty { throw pair.value.error("'\(path)' needs at least one value") }
            return Entry(path: path, values: values)
        }
    }

    package static var jsonSchema: JSONValue {
        let scalar: JSONValue = ["type": ["string", "number", "boolean"]]
        return [
            "type": "object", "minProperties": 1,
            "additionalProperties": ["oneOf": [scalar, ["type": "array", "items": scalar, "minItems": 1]]],
        ]
    }

    package func holds(for answer: JSONValue) -> Bool {
        entries.allSatisfy { entry in
            guard let value = answer.lookup(entry.path)?.stringValue else { return false }
            return entry.values.contains(value)
        }
    }

    /// The answer's values of the fields named (`processing`; `status processing, stage 2` for several).
    package func describe(_ answer: JSONValue) -> String {
        let values = entries.map { answer.lookup($0.path).map { $0.stringValue ?? $0.serialized() } ?? "(none)" }
        if values.count == 1 { return values[0] }
        return zip(entries, values).map { "\($0.path.split(separator: ".").last ?? "") \($1)" }.joined(
            separator: ", ")
    }

    package var description: String {
        entries.map { "\($0.path) in [\($0.values.joined(separator: ", "))]" }.joined(separator: " and ")
    }
}
