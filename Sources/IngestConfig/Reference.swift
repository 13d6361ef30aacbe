import Foundation
import IngestCore
import IngestStages
import IngestTemplates

// The pipeline-file reference (docs/pipeline-reference.md), written from the same field declarations that decode
// files and build the JSON Schema (`OptionDoc`), so the three cannot drift (a test compares the page with this text).

extension Pipeline {
    /// Markdown: the top-level keys, `input`, then every registered stage with its options.
    package static var markdownReference: String {
        var text = "### Top level\n\n"
        text += table(PipelineFileOptions.fieldDocs)
        text += "\n### `input`\n\n"
        text += table(InputOptions.fieldDocs)
        text += "\n### `dedupe`\n\n"
        text += table(DedupeOptions.fieldDocs)
        text += "\n### Stages\n\n"
        text +=
            "Each item of `stages:` is `- NAME: {options}` (or `- NAME:` when no option is needed). Every stage also "
        text += "takes `as: NAME`, the name its results are stored under for later templates "
        text +=
            "(`{{ticket.upload_url}}`), and `when: {extensions: [m4a]}` or `when: {paths: [\"pets/**\"]}`, the files "
        text += "it applies to (others go past it untouched). `ingest validate` runs only the stages marked *local*.\n"
        for descriptor in StageRegistry.all {
            text += "\n#### `\(descriptor.name)` (\(descriptor.usesNetwork ? "network" : "local"))\n\n"
            text += descriptor.summary + "\n"
            guard !descriptor.optionDocs.isEmpty else {
                text += "\nNo options.\n"
                continue
            }
            text += "\n"
            text += table(descriptor.optionDocs)
        }
        return text
    }

    private static func table(_ rows: [OptionDoc]) -> String {
        var text = "| key | type | default | meaning |\n|---|---|---|---|\n"
        for row in rows {
            let shownDefault = row.required ? "required" : (row.defaultText.map { "`\($0)`" } ?? "—")
            let doc = row.doc.replacingOccurrences(of: "|", with: "\\|")
            text += "| `\(row.name)` | \(typeText(row.schema)) | \(shownDefault) | \(doc) |\n"
        }
        return text
    }

    /// A few words for a value's JSON Schema: `size`, `duration`, `list of strings`, `one of: a, b`.
    static func typeText(_ schema: JSONValue) -> String {
        guard case .object(let object) = schema else { return "any" }
        if case .array(let values)? = object["enum"] {
            return "one of " + values.compactMap(\.stringValue).map { "`\($0)`" }.joined(separator: ", ")
        }
        if case .array(let alternatives)? = object["anyOf"] {
            let patterns = alternatives.compactMap { $0["pattern"]?.stringValue }
            if patterns.contains(where: { $0.contains("MiB") }) { return "size" }
            if patterns.contains(where: { $0.contains("min|h") }) { return "duration" }
            if let list = alternatives.first(where: { $0["type"] == "array" }), let items = list["items"] {
                return "list of \(typeText(items))"
            }
            return alternatives.map(typeText).joined(separator: " or ")
        }
        switch object["type"]?.stringValue {
        case "integer": return "integer"
        case "number": return "number"
        case "boolean": return "boolean"
        case "string": return "string"
        case "object": return "mapping"
        case "array": return "list"
        default: return "any"
        }
    }
}
