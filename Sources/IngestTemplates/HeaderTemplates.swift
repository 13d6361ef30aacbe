import Foundation
import IngestCore

/// One `Name: template` header line; a mapping in the file keeps its order.
package struct HeaderTemplate: Sendable, Equatable {
    package var name: String
    package var value: Template
}

/// Request headers as written in the file: a mapping of names to value templates, order kept.
package struct HeaderTemplates: OptionValue, Sendable, Equatable {
    package var entries: [HeaderTemplate] = []
    package init() {}

    package init(from node: ConfigNode) throws {
        entries = try node.mappingPairs(of: "header names to values").map { pair in
            let name = try String(from: pair.key)
            if name.isEmpty || name.contains(where: { $0 == ":" || $0.isWhitespace }) {
                throw pair.key.error("\(ConfigNode.echo(name)) is not a header name")
            }
            return HeaderTemplate(name: name, value: try Template(from: pair.value))
        }
    }

    package static var jsonSchema: JSONValue {
        ["type": "object", "additionalProperties": ["type": ["string", "number", "boolean"]]]
    }
}
