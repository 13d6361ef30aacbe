import Foundation

/// A value that can appear in a pipeline file: it decodes itself from a node (throwing an error that carries the
/// node's line and column) and describes itself as JSON Schema. Stage options are built from these, so one
/// declaration drives validation, the README reference and `ingest schema`.
package protocol OptionValue {
    init(from node: ConfigNode) throws
    static var jsonSchema: JSONValue { get }
}

/// A stage's options: a struct with defaults in `init()` and a list of fields. Decoding starts from the
/// defaults, rejects unknown keys (with a suggestion), and checks required ones.
package protocol StageOptions: OptionValue {
    init()
    static var fields: [OptionField<Self>] { get }
    /// Cross-field checks after decoding (e.g. min ≤ max); throw `node.error(...)`.
    func validate(at node: ConfigNode) throws
}

extension StageOptions {
    package func validate(at node: ConfigNode) throws {}

    package init(from node: ConfigNode) throws {
        self.init()
        let fields = Self.fields
        if node.isNull {
            if let missing = fields.first(where: \.required) {
                throw node.error("missing required option '\(missing.name)'")
            }
            return
        }
        guard case .mapping(let pairs) = node.kind else {
            throw node.error("expected a mapping of options, found \(node.kindDescription)")
        }
        var seen = Set<String>()
        for (key, value) in pairs {
            let name = key.scalar ?? ""
            guard let field = fields.first(where: { $0.name == name }) else {
                throw key.error(
                    "unknown option \(ConfigNode.echo(name)); known: \(fields.map(\.name).joined(separator: ", "))",
                    suggestion: closestMatch(to: name, in: fields.map(\.name)))
            }
            guard seen.insert(name).inserted else { throw key.error("option '\(name)' is given twice") }
            try field.assign(&self, value)
        }
        if let missing = fields.first(where: { $0.required && !seen.contains($0.name) }) {
            throw node.error("missing required option '\(missing.name)'")
        }
        try validate(at: node)
    }

    package static var jsonSchema: JSONValue {
        var properties = JSONObject()
        for field in fields { properties[field.name] = field.schema }
        var schema: JSONObject = ["type": "object", "additionalProperties": false, "properties": .object(properties)]
        let required = fields.filter(\.required).map { JSONValue.string($0.name) }
        if !required.isEmpty { schema["required"] = .array(required) }
        return .object(schema)
    }
}

/// One option of a stage: its name in the file, its documentation, and how it is decoded into the options struct.
package struct OptionField<Root> {
    package let name: String
    package let doc: String
    package let required: Bool
    /// How the default reads in the docs (`"200"`, `"number of cores"`); nil when there is none.
    package let defaultText: String?
    package let valueSchema: JSONValue
    package let assign: (inout Root, ConfigNode) throws -> Void

    init(
        name: String, doc: String, required: Bool, defaultText: String?, valueSchema: JSONValue,
        assign: @escaping (inout Root, ConfigNode) throws -> Void
    ) {
        self.name = name
        self.doc = doc
        self.required = required
        self.defaultText = defaultText
        self.valueSchema = valueSchema
        self.assign = assign
    }

    package var schema: JSONValue {
        guard case .object(var object) = valueSchema else { return valueSchema }
        var described = JSONObject()
        described["description"] = .string(defaultText.map { "\(doc) Default: \($0)." } ?? doc)
        for (key, value) in object.pairs { described[key] = value }
        object = described
        return .object(object)
    }

    package init<Value: OptionValue>(
        _ name: String, _ keyPath: WritableKeyPath<Root, Value>, doc: String, required: Bool = false,
        default defaultText: String? = nil
    ) {
        self.init(
            name: name, doc: doc, required: required, defaultText: defaultText,
            valueSchema: Value.schemaWithDefaultRange,
            assign: { root, node in root[keyPath: keyPath] = try Value.decodeInDefaultRange(node, name: name) })
    }

    package init<Value: OptionValue>(
        _ name: String, _ keyPath: WritableKeyPath<Root, Value?>, doc: String, required: Bool = false,
        default defaultText: String? = nil
    ) {
        self.init(
            name: name, doc: doc, required: required, defaultText: defaultText,
            valueSchema: Value.schemaWithDefaultRange,
            assign: { root, node in root[keyPath: keyPath] = try Value.decodeInDefaultRange(node, name: name) })
    }
}

// MARK: - Scalars

extension String: OptionValue {
    package init(from node: ConfigNode) throws {
        guard let text = node.scalar, !node.isNull else {
            throw node.error("expected a string, found \(node.kindDescription)")
        }
        self = text
    }
    package static var jsonSchema: JSONValue { ["type": "string"] }
}

extension Bool: OptionValue {
    package init(from node: ConfigNode) throws {
        switch node.scalar {
        case "true", "True", "TRUE", "yes", "on": self = true
        case "false", "False", "FALSE", "no", "off": self = false
        default: throw node.error("expected true or false, found \(node.kindDescription)")
        }
    }
    package static var jsonSchema: JSONValue { ["type": "boolean"] }
}

extension Int: OptionValue {
    package init(from node: ConfigNode) throws {
        guard let text = node.scalar, let value = Int(text.replacingOccurrences(of: "_", with: "")) else {
            throw node.error("expected a whole number, found \(node.kindDescription)")
        }
        self = value
    }
    package static var jsonSchema: JSONValue { ["type": "integer"] }
}

extension Double: OptionValue {
    package init(from node: ConfigNode) throws {
        guard let text = node.scalar, let value = Double(text), value.isFinite else {
            throw node.error("expected a number, found \(node.kindDescription)")
        }
        self = value
    }
    package static var jsonSchema: JSONValue { ["type": "number"] }
}

extension Array: OptionValue where Element: OptionValue {
    /// A list; a single scalar is accepted as a list of one (`extensions: mov`).
    package init(from node: ConfigNode) throws {
        switch node.kind {
        case .sequence(let items): self = try items.map { try Element(from: $0) }
        case .scalar where !node.isNull: self = [try Element(from: node)]
        default: throw node.error("expected a list, found \(node.kindDescription)")
        }
    }
    package static var jsonSchema: JSONValue {
        ["anyOf": [["type": "array", "items": Element.jsonSchema], Element.jsonSchema]]
    }
}

/// Options whose values are a closed set of words (`require: [audio]`, `metadata: strip`).
package protocol OptionEnum: OptionValue, CaseIterable, RawRepresentable where RawValue == String {}

extension OptionEnum {
    package init(from node: ConfigNode) throws {
        let text = try String(from: node)
        let names = Self.allCases.map(\.rawValue)
        guard let value = Self(rawValue: text) else {
            throw node.error(
                "\(ConfigNode.echo(text)) is not one of: \(names.joined(separator: ", "))",
                suggestion: closestMatch(to: text, in: names))
        }
        self = value
    }
    package static var jsonSchema: JSONValue {
        ["type": "string", "enum": .array(allCases.map { .string($0.rawValue) })]
    }
}
