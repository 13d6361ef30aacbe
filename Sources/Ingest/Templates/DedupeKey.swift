import Foundation

/// `dedupe: {key: "{{sha256}}"}` — a template rendered per file before any stage runs; a file whose key another
/// journaled file already holds is skipped, naming that file. `{{sha256}}` skips the same content under another
/// name; `"{{dir.name}}-{{date.yyyyMMdd}}"` is HelpPet's "one recording per pet per day", enforced before a
/// request could be refused with 409.
public struct DedupeKey: OptionValue, Sendable, Equatable, CustomStringConvertible {
    enum Part: Sendable, Equatable {
        case text(String)
        case variable(String)
    }

    public let source: String
    let parts: [Part]

    /// The variables a key may use: built-ins only, since it is rendered before any stage runs.
    static let variables = JournalTemplate.variables

    public init(_ source: String) throws(JournalTemplate.SyntaxError) {
        self.source = source
        var parts: [Part] = []
        var rest = source[...]
        while let open = rest.range(of: "{{") {
            if open.lowerBound > rest.startIndex { parts.append(.text(String(rest[..<open.lowerBound]))) }
            guard let close = rest[open.upperBound...].range(of: "}}") else {
                throw JournalTemplate.SyntaxError(message: "'{{' without a closing '}}' in '\(source)'")
            }
            let name = rest[open.upperBound..<close.lowerBound].trimmingCharacters(in: .whitespaces)
            guard DedupeKey.variables.contains(name) else {
                throw JournalTemplate.SyntaxError(
                    message: "'{{\(name)}}' cannot be used in a dedupe key; use "
                        + DedupeKey.variables.map { "{{\($0)}}" }.joined(separator: ", "))
            }
            parts.append(.variable(name))
            rest = rest[close.upperBound...]
        }
        if !rest.isEmpty { parts.append(.text(String(rest))) }
        guard parts.contains(where: { if case .variable = $0 { true } else { false } }) else {
            throw JournalTemplate.SyntaxError(
                message: "a dedupe key without a {{variable}} would make every file a duplicate of the first")
        }
        self.parts = parts
    }

    public init(from node: ConfigNode) throws {
        let text = try String(from: node)
        do {
            try self.init(text)
        } catch {
            throw node.error(error.message)
        }
    }

    public static var jsonSchema: JSONValue { ["type": "string"] }
    public var description: String { source }

    /// The key for one file, rendered by the shared template renderer (the same `uuid`, `date` and cached
    /// `sha256` the upload templates see). Throws `ItemFailed` (stage `dedupe`) when a value cannot be had.
    public func render(for item: Item, settings: RunSettings) throws -> String {
        let scope = TemplateScope(item: item, context: StageContext(settings: settings), stage: "dedupe")
        var out = ""
        for part in parts {
            switch part {
            case .text(let text): out += text
            case .variable(let name):
                // The input's own hash (before any transcode), read once and kept for the journal.
                if name == "sha256" {
                    out += try item.sha256(stage: "dedupe")
                } else {
                    out += try Template("{{\(name)}}").render(scope)
                }
            }
        }
        return out
    }
}

/// `dedupe:` in the pipeline file.
struct DedupeOptions: StageOptions, Sendable {
    var key: DedupeKey?

    init() {}

    static var fields: [OptionField<DedupeOptions>] {
        [
            OptionField(
                "key", \.key,
                doc:
                    "Template naming what must be unique (`{{sha256}}`: the same content; "
                    + "`{{dir.name}}-{{date.yyyyMMdd}}`: one file per folder per day). Uses "
                    + DedupeKey.variables.map { "`{{\($0)}}`" }.joined(separator: ", ") + ".",
                required: true)
        ]
    }
}

/// The built-in template values the journal needs before any stage runs: which ones a dedupe key may use (no
/// stage has run yet, so no stage results), and the `uuid` and `date` it fixes first, stored in
/// `item.templateValues` exactly as the shared renderer (`TemplateScope`) makes and reads them.
public enum JournalTemplate {
    public struct SyntaxError: Error, Sendable {
        public var message: String
    }

    static let variables = [
        "sha256", "file.name", "file.stem", "file.ext", "file.path", "dir.name", "date.yyyy", "date.MM", "date.dd",
        "date.yyyyMMdd", "uuid",
    ]

    /// The file's `uuid`, made once and kept in `templateValues` (the journal saves it before any upload).
    static func uuid(of item: Item) -> String {
        if case .string(let made)? = item.templateValues["uuid"] { return made }
        let made = UUID().uuidString.lowercased()
        item.templateValues["uuid"] = .string(made)
        return made
    }

    /// The file's `date`: when it was first worked on, kept like `uuid` so a re-run names the same day.
    static func date(of item: Item) -> Date {
        switch item.templateValues["date"] {
        case .double(let seconds)?: return Date(timeIntervalSince1970: seconds)
        case .int(let seconds)?: return Date(timeIntervalSince1970: Double(seconds))
        default:
            let now = Date()
            item.templateValues["date"] = .double(now.timeIntervalSince1970)
            return now
        }
    }
}
