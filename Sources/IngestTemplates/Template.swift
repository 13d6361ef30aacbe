import Foundation
import IngestCore

/// Text with `{{ name.path }}` placeholders (Mustache's delimiters, without sections or escaping: values go
/// into URLs, headers, keys and JSON, never HTML). Parsed when the pipeline loads, so a malformed template is a
/// pipeline-file error with a line number rather than a per-file surprise. A variable may end in filters, as in
/// Liquid: `{{geohash | first:5}}` (seed 004 groups objects by a 5-character cell of a 6-character geohash).
package struct Template: OptionValue, Sendable, Equatable, CustomStringConvertible {
    enum Part: Sendable, Equatable {
        case text(String)
        case variable(String)
        /// A variable whose text goes through filters, left to right; the result is always a string.
        case filtered(String, [TemplateFilter])
    }

    package let source: String
    let parts: [Part]

    /// The empty template: a placeholder default for options that are required (it never reaches a request).
    package static let empty = Template(source: "", parts: [])

    init(source: String, parts: [Part]) {
        self.source = source
        self.parts = parts
    }

    package init(_ source: String) throws {
        self.init(source: source, parts: try Self.parse(source) { try Self.variable($0, in: source) })
    }

    /// The one `{{…}}` scanner: splits `source` at its placeholders, keeping the text between them and handing the
    /// inside of each to `placeholder`, which makes its part or throws. `DedupeKey` scans with its own vocabulary.
    static func parse(_ source: String, placeholder: (Substring) throws -> Part) throws -> [Part] {
        var parts: [Part] = []
        var rest = source[...]
        while let open = rest.range(of: "{{") {
            if open.lowerBound > rest.startIndex { parts.append(.text(String(rest[..<open.lowerBound]))) }
            guard let close = rest[open.upperBound...].range(of: "}}") else {
                throw TemplateSyntaxError(message: "'{{' without a closing '}}' in '\(source)'")
            }
            parts.append(try placeholder(rest[open.upperBound..<close.lowerBound]))
            rest = rest[close.upperBound...]
        }
        if !rest.isEmpty { parts.append(.text(String(rest))) }
        return parts
    }

    /// The inside of one placeholder: a dotted name (letters, digits, `_`, `-`), then any `| filter`s.
    private static func variable(_ inside: Substring, in source: String) throws -> Part {
        let pieces = inside.split(separator: "|", omittingEmptySubsequences: false)
        let name = pieces[0].trimmingCharacters(in: .whitespaces)
        let filters = try pieces.dropFirst().map { try TemplateFilter(parsing: String($0), in: source) }
        let valid =
            !name.isEmpty
            && name.split(separator: ".", omittingEmptySubsequences: false).allSatisfy {
                !$0.isEmpty && $0.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" }
            }
        guard valid else {
            throw TemplateSyntaxError(message: "'{{\(name)}}' is not a variable name like file.name")
        }
        return filters.isEmpty ? .variable(name) : .filtered(name, filters)
    }

    package init(from node: ConfigNode) throws { self = try node.template(Self.init(_:)) }

    package static var jsonSchema: JSONValue { ["type": "string"] }
    package var description: String { source }

    /// Every variable named, in order.
    package var variables: [String] {
        parts.compactMap {
            switch $0 {
            case .variable(let name), .filtered(let name, _): return name
            case .text: return nil
            }
        }
    }

    /// The variable when the template is exactly one `{{x}}` and nothing else: such a value keeps x's JSON type.
    var soleVariable: String? {
        if parts.count == 1, case .variable(let name) = parts[0] { return name }
        return nil
    }

    /// The text with every variable filled in; objects and arrays are written as compact JSON.
    package func render(_ scope: TemplateScope) throws -> String {
        var out = ""
        for part in parts { out += try part.render(scope) }
        return out
    }

    /// As `render`, but a template that is exactly one variable yields that variable's value with its type.
    package func renderValue(_ scope: TemplateScope) throws -> JSONValue {
        if let name = soleVariable { return try scope.value(name) }
        return .string(try render(scope))
    }
}

extension Template.Part {
    /// This part's text for one file: a variable's value as text (objects and arrays as compact JSON; null fails
    /// the file), then through its filters.
    package func render(_ scope: TemplateScope) throws -> String {
        switch self {
        case .text(let text): return text
        case .variable(let name): return try Self.text(of: name, in: scope)
        case .filtered(let name, let filters):
            return filters.reduce(try Self.text(of: name, in: scope)) { text, filter in filter.apply(text) }
        }
    }

    private static func text(of name: String, in scope: TemplateScope) throws -> String {
        let value = try scope.value(name)
        switch value {
        case .null: throw scope.missing(name, because: "it is null")
        case .object, .array: return value.serialized()
        default: return value.stringValue ?? ""
        }
    }
}

extension ConfigNode {
    /// This node's text parsed by `parse` (a `Template`, a `DedupeKey`): a syntax error becomes a pipeline-file
    /// error at this node's line.
    func template<Parsed>(_ parse: (String) throws -> Parsed) throws -> Parsed {
        let text = try String(from: self)
        do {
            return try parse(text)
        } catch let error as TemplateSyntaxError {
            throw self.error(error.message)
        }
    }
}

/// A template the pipeline file cannot hold: caught at load and reported at the option's line.
package struct TemplateSyntaxError: Error, Sendable, CustomStringConvertible {
    package var message: String
    package var description: String { message }

    package init(message: String) { self.message = message }
}
