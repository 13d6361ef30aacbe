import Foundation

/// A value that can appear in a pipeline file: it decodes itself from a node (throwing an error that carries the
/// node's line and column) and describes itself as JSON Schema. Stage options are built from these, so one
/// declaration drives validation, the README reference and `ingest schema`.
package protocol OptionValue {
    init(from node: ConfigNode) throws
    static var jsonSchema: JSONValue { get }
}

/// A value made of other values (a stage's options, the list of stages): it reports every problem it finds in one
/// pass instead of stopping at the first, and keeps whatever decoded.
package protocol CollectingOptionValue: OptionValue {
    init(from node: ConfigNode, errors: inout [PipelineFileError])
}

extension CollectingOptionValue {
    /// Throws the one error found, or `PipelineFileErrors` with all of them.
    package init(from node: ConfigNode) throws {
        var errors: [PipelineFileError] = []
        self.init(from: node, errors: &errors)
        if errors.count == 1, let only = errors.first { throw only }
        if !errors.isEmpty { throw PipelineFileErrors(errors) }
    }
}

/// A stage's options (or any mapping of named values: the file's top level, `input`, `dedupe`): a struct with
/// defaults in `init()` and a list of fields. The list is the one spec: `OptionsDecoder.swift` decodes from it,
/// `jsonSchema` and the docs reference are written from it.
package protocol StageOptions: CollectingOptionValue {
    init()
    static var fields: [OptionField<Self>] { get }
    /// Cross-field checks after decoding (e.g. min ≤ max); throw `node.error(...)`.
    func validate(at node: ConfigNode) throws
    /// What the docs reference shows of each option: `fields` (options whose keys depend on a choice, `upload`'s
    /// `method:`, show every choice's, `OptionVariants`).
    static var fieldDocs: [OptionDoc] { get }
}

extension StageOptions {
    package func validate(at node: ConfigNode) throws {}

    /// Decodes the options of a stage (`OptionsLevel.options`).
    package init(from node: ConfigNode, errors: inout [PipelineFileError]) {
        self.init(from: node, level: .options, errors: &errors)
    }

    package static var jsonSchema: JSONValue {
        var properties = JSONObject()
        for field in fields { properties[field.name] = field.schema }
        var schema: JSONObject = ["type": "object", "additionalProperties": false, "properties": .object(properties)]
        let required = fields.filter(\.required).map { JSONValue.string($0.name) }
        if !required.isEmpty { schema["required"] = .array(required) }
        return .object(schema)
    }

    /// Name, doc, default and value schema of each field, for the docs reference.
    package static var fieldDocs: [OptionDoc] { fields.map(\.optionDoc) }
}

/// One field of a spec with its type erased: what the docs reference shows of it.
package struct OptionDoc: Sendable {
    package let name: String
    package let doc: String
    package let required: Bool
    package let defaultText: String?
    package let schema: JSONValue
}

/// One option of a stage: its name in the file, its documentation, and how it is decoded into the options struct.
package struct OptionField<Root> {
    package let name: String
    package let doc: String
    package let required: Bool
    /// How the default reads in the docs (`"200"`, `"number of cores"`); nil when there is none.
    package let defaultText: String?
    package let valueSchema: JSONValue
    /// Decodes the field's node into the root, adding what is wrong to `errors`.
    package let assign: (inout Root, ConfigNode, inout [PipelineFileError]) -> Void

    init(
        name: String, doc: String, required: Bool, defaultText: String?, valueSchema: JSONValue,
        assign: @escaping (inout Root, ConfigNode, inout [PipelineFileError]) -> Void
    ) {
        self.name = name
        self.doc = doc
        self.required = required
        self.defaultText = defaultText
        self.valueSchema = valueSchema
        self.assign = assign
    }

    /// A field whose value throws the one error it finds.
    init(
        name: String, doc: String, required: Bool, defaultText: String?, valueSchema: JSONValue,
        decode: @escaping (inout Root, ConfigNode) throws -> Void
    ) {
        self.init(
            name: name, doc: doc, required: required, defaultText: defaultText, valueSchema: valueSchema,
            assign: { root, node, errors in
                do {
                    try decode(&root, node)
                } catch {
                    errors += PipelineFileError.collected(error, at: node)
                }
            })
    }

    /// What the docs reference shows of the field.
    package var optionDoc: OptionDoc {
        OptionDoc(name: name, doc: doc, required: required, defaultText: defaultText, schema: valueSchema)
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
            assign: { root, node, errors in
                if let value = Value.decodeField(node, name: name, errors: &errors) { root[keyPath: keyPath] = value }
            })
    }

    package init<Value: OptionValue>(
        _ name: String, _ keyPath: WritableKeyPath<Root, Value?>, doc: String, required: Bool = false,
        default defaultText: String? = nil
    ) {
        self.init(
            name: name, doc: doc, required: required, defaultText: defaultText,
            valueSchema: Value.schemaWithDefaultRange,
            assign: { root, node, errors in
                if let value = Value.decodeField(node, name: name, errors: &errors) { root[keyPath: keyPath] = value }
            })
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
        guard let value = Self(rawValue: try node.word(in: Self.allCases.map(\.rawValue))) else {
            throw node.error("expected one of: \(Self.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        self = value
    }
    package static var jsonSchema: JSONValue {
        ["type": "string", "enum": .array(allCases.map { .string($0.rawValue) })]
    }
}
