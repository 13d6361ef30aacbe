import Foundation
import IngestCore

/// One `Name: template` header line; a mapping in the file keeps its order.
package struct HeaderTemplate: Sendable, Equatable {
    package var name: String
    package var value: Template
    /// The environment variables the value was written with (`Bearer ${FIREBASE_TOKEN}`): a refusal names them.
    package var variables: [String] = []
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
            return HeaderTemplate(name: name, value: try Template(from: pair.value), variables: pair.value.variables)
        }
    }

    /// The variables the `name` header was written with (case-insensitive name); empty when it has none.
    package func variables(of name: String) -> [String] {
        entries.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.variables ?? []
    }

    /// What an authentication refusal (401, 403) adds to its message: the variables the headers were written with,
    /// the ones to check (`; check FIREBASE_TOKEN, which the Authorization header reads`); empty when none.
    package func credentialHint(status: Int) -> String {
        guard status == 401 || status == 403 else { return "" }
        let used = entries.filter { !$0.variables.isEmpty }
        guard !used.isEmpty else { return "" }
        let names = used.flatMap(\.variables).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
        let headers = used.map(\.name).joined(separator: " and ")
        return "; check \(names.joined(separator: ", ")), which the \(headers) header\(used.count > 1 ? "s" : "") "
            + "read\(used.count > 1 ? "" : "s")"
    }

    package static var jsonSchema: JSONValue {
        ["type": "object", "additionalProperties": ["type": ["string", "number", "boolean"]]]
    }
}
