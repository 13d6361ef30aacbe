/// A mapping of names to values of one type, in the file's order (`env: {NAME: value}`, `headers:`, a test file's
/// `stubs:`). Null reads as no pairs. Each value decodes through its own type, so its errors carry its line.
package struct NamedValues<Value: OptionValue & Sendable>: OptionValue, Sendable {
    package var pairs: [(name: String, value: Value)] = []

    package init() {}

    package init(from node: ConfigNode) throws {
        let what = "names to values"
        var seen = Set<String>()
        pairs = try node.mappingPairs(of: what).map { pair in
            let name = try String(from: pair.key)
            guard seen.insert(name).inserted else { throw pair.key.error("'\(name)' is given twice") }
            return (name, try Value(from: pair.value))
        }
    }

    package static var jsonSchema: JSONValue {
        ["type": "object", "additionalProperties": Value.jsonSchema]
    }

    /// The values by name.
    package var dictionary: [String: Value] { Dictionary(pairs, uniquingKeysWith: { $1 }) }
}
