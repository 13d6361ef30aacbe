import Foundation
import IngestCore
import IngestFiles

/// `dedupe: {key: "{{sha256}}"}` — a template rendered per file before any stage runs; a file whose key another
/// journaled file already holds is skipped, naming that file. `{{sha256}}` skips the same content under another
/// name; `"{{dir.name}}-{{date.yyyyMMdd}}"` is HelpPet's "one recording per pet per day", enforced before a
/// request could be refused with 409.
package struct DedupeKey: OptionValue, Sendable, Equatable, CustomStringConvertible {
    /// The key parsed once, at load, by the one template parser; its variables are all plain built-ins.
    let template: Template
    package var source: String { template.source }

    /// The variables a key may use: built-ins only, since it is rendered before any stage runs.
    static let variables = JournalTemplate.variables

    package init(_ source: String) throws {
        let parts = try Template.parse(source) { inside in
            let name = inside.trimmingCharacters(in: .whitespaces)
            guard DedupeKey.variables.contains(name) else {
                throw TemplateSyntaxError(
                    message: "'{{\(name)}}' cannot be used in a dedupe key; use "
                        + DedupeKey.variables.map { "{{\($0)}}" }.joined(separator: ", "))
            }
            return .variable(name)
        }
        guard parts.contains(where: { if case .variable = $0 { true } else { false } }) else {
            throw TemplateSyntaxError(
                message: "a dedupe key without a {{variable}} would make every file a duplicate of the first")
        }
        template = Template(source: source, parts: parts)
    }

    package init(from node: ConfigNode) throws { self = try node.template(Self.init(_:)) }

    package static var jsonSchema: JSONValue { ["type": "string"] }
    package var description: String { source }

    /// The key for one file, rendered by the shared template renderer (the same `uuid`, `date` and cached
    /// `sha256` the upload templates see). Throws `ItemFailed` (stage `dedupe`) when a value cannot be had.
    package func render(for item: Item, settings: RunSettings) throws -> String {
        let scope = TemplateScope(item: item, context: StageContext(settings: settings), stage: "dedupe")
        var out = ""
        for part in template.parts {
            // The input's own hash (before any transcode), read once and kept for the journal.
            if case .variable("sha256") = part {
                out += try item.sha256(stage: "dedupe")
            } else {
                out += try part.render(scope)
            }
        }
        return out
    }
}

/// `dedupe:` in the pipeline file.
package struct DedupeOptions: StageOptions, Sendable {
    package var key: DedupeKey?

    package init() {}

    package static var fields: [OptionField<DedupeOptions>] {
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
/// stage has run yet, so no stage results), and the `uuid` and `date` it fixes first, kept in `item.templateValues`
/// (and the journal) so a re-run names the same; `TemplateScope` reads `{{uuid}}` and `{{date.*}}` through them.
package enum JournalTemplate {
    static let variables = [
        "sha256", "file.name", "file.stem", "file.ext", "file.path", "dir.name", "date.yyyy", "date.MM", "date.dd",
        "date.yyyyMMdd", "uuid",
    ]

    /// The file's `uuid`, made once and kept in `templateValues` (the journal saves it before any upload).
    package static func uuid(of item: Item) -> String {
        if case .string(let made)? = item.templateValues["uuid"] { return made }
        let made = UUID().uuidString.lowercased()
        item.templateValues["uuid"] = .string(made)
        return made
    }

    /// The file's `date`: when it was first worked on (on the run's clock), kept like `uuid` so a re-run names the
    /// same day.
    package static func date(of item: Item) -> Date {
        switch item.templateValues["date"] {
        case .double(let seconds)?: return Date(timeIntervalSince1970: seconds)
        case .int(let seconds)?: return Date(timeIntervalSince1970: Double(seconds))
        default:
            let now = item.timings.started
            item.templateValues["date"] = .double(now.timeIntervalSince1970)
            return now
        }
    }
}
