import Foundation
import IngestCore

/// A JSON value written in YAML whose strings are templates: `json:` bodies and s3-post `fields:`. Plain YAML
/// numbers, booleans and null keep their type; a quoted or plain string is a template, and one that is exactly
/// `{{x}}` takes x's type (so `"{{probe.duration}}"` sends a number and `"{{ticket.upload_fields}}"` an object).
package indirect enum TemplateValue: OptionValue, Sendable, Equatable {
    case literal(JSONValue)
    case text(Template)
    case array([TemplateValue])
    case object([TemplatePair])

    package struct TemplatePair: Sendable, Equatable {
        package var key: String
        package var value: TemplateValue
    }

    package init(from node: ConfigNode) throws {
        switch node.kind {
        case .scalar(let text, let plain):
            if node.isNull {
                self = .literal(.null)
            } else if plain, text == "true" || text == "false" {
                self = .literal(.bool(text == "true"))
            } else if plain, let int = Int64(text) {
                self = .literal(.int(int))
            } else if plain, let double = Double(text), double.isFinite, text.contains(where: { $0.isNumber }) {
                self = .literal(.double(double))
            } else {
                self = .text(try Template(from: node))
            }
        case .sequence(let items): self = .array(try items.map(TemplateValue.init(from:)))
        case .mapping(let pairs):
            self = .object(
                try pairs.map { pair in
                    TemplatePair(key: try String(from: pair.key), value: try TemplateValue(from: pair.value))
                })
        }
    }

    package static var jsonSchema: JSONValue { [:] }

    package func render(_ scope: TemplateScope) throws -> JSONValue {
        switch self {
        case .literal(let value): return value
        case .text(let template): return try template.renderValue(scope)
        case .array(let items): return .array(try items.map { try $0.render(scope) })
        case .object(let pairs):
            var object = JSONObject()
            for pair in pairs { object[pair.key] = try pair.value.render(scope) }
            return .object(object)
        }
    }

    /// Every variable named anywhere inside.
    package var variables: [String] {
        switch self {
        case .literal: return []
        case .text(let template): return template.variables
        case .array(let items): return items.flatMap(\.variables)
        case .object(let pairs): return pairs.flatMap(\.value.variables)
        }
    }
}
