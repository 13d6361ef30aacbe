import Foundation
import IngestCore
import IngestStages
import IngestTemplates

extension TemplateOffer {
    /// What every template may read, as `TemplateScope.value` renders it.
    static let builtins: [TemplateOffer] = [
        TemplateOffer(name: "file", fields: ["name", "stem", "ext", "size", "path"], wholeValue: false),
        TemplateOffer(name: "dir", fields: ["name"], wholeValue: false),
        TemplateOffer(name: "artifact", fields: ["name", "stem", "ext", "size", "path"], wholeValue: false),
        TemplateOffer(name: "date", fields: ["yyyy", "MM", "dd", "yyyyMMdd", "HH", "mm"], wholeValue: false),
        TemplateOffer(name: "sha256", fields: []),
        TemplateOffer(name: "md5", fields: []),
        TemplateOffer(name: "uuid", fields: []),
        // The probe is read on demand when no probe stage ran.
        ProbeStage.templateOffer!,
        TemplateOffer(name: "env", fields: nil, wholeValue: false),
        // Named outputs are checked by `OutputCheck`, which knows which earlier stage made each.
        TemplateOffer(name: "outputs", fields: nil, wholeValue: false),
    ]
}

/// Checks every `{{…}}` in a pipeline file's stages against what is offered at that stage: the built-ins, and
/// what each earlier stage declares (`Stage.templateOffer`, or anything under its `as:` name). One check, used by
/// load (so `validate` and `run` refuse a typo before any file is read) and so by `lint`.
package enum TemplateCheck {
    static func errors(stages entries: [StageEntry], yaml: String) -> [PipelineFileError] {
        let lines = yaml.split(separator: "\n", omittingEmptySubsequences: false)
        let stages: [(name: String, options: ConfigNode, offer: TemplateOffer?, named: Bool)] = entries.compactMap {
            entry in
            guard let name = entry.name, let options = entry.options else { return nil }
            let declared = entry.descriptor?.templateOffer
            if let named = entry.writtenResultName {
                return (name, options, TemplateOffer(name: named, fields: declared?.fields), true)
            }
            return (name, options, declared, false)
        }
        var errors: [PipelineFileError] = []
        for (index, stage) in stages.enumerated() {
            var offered: [String: TemplateOffer] = [:]
            for offer in TemplateOffer.builtins { offered[offer.name] = offer }
            for earlier in stages[..<index] { if let offer = earlier.offer { offered[offer.name] = offer } }
            // A stage's own name: `verify:` reading its own answer is lint's warning, not a load error.
            if stage.named, let own = stage.offer, offered[own.name] == nil { offered[own.name] = own }
            // Each later offer as the stage that makes it: `as: ticket`, or the geohash stage.
            let later = stages[(index + 1)...].compactMap { next in
                next.offer.map { ($0.name, next.named ? "the stage with 'as: \($0.name)'" : "the \(next.name) stage") }
            }
            for (variable, location) in variables(in: stage.options, lines: lines) {
                if let message = problem(variable, offered: offered, later: later, stage: stage.name) {
                    errors.append(
                        PipelineFileError(location: location, message: message.text, suggestion: message.suggestion))
                }
            }
        }
        return errors
    }

    /// Why `variable` has no value at this stage, with the closest offered name; nil when it is fine.
    static func problem(
        _ variable: String, offered: [String: TemplateOffer], later: [(name: String, maker: String)], stage: String
    ) -> (text: String, suggestion: String?)? {
        let path = variable.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let root = path[0]
        guard let offer = offered[root] else {
            let names = offered.keys.sorted()
            if let maker = later.first(where: { $0.name == root })?.maker {
                return (
                    "{{\(variable)}} is used by \(stage) before \(maker) runs; "
                        + "offered here: \(names.joined(separator: ", "))", nil
                )
            }
            return (
                "{{\(variable)}}: no earlier stage offers '\(root)'; offered here: \(names.joined(separator: ", "))",
                closestMatch(to: root, in: names)
            )
        }
        guard let fields = offer.fields else {
            if path.count == 1 && !offer.wholeValue {
                return ("{{\(variable)}} needs a field, as in {{\(root).NAME}}", nil)
            }
            return nil
        }
        if path.count == 1 {
            if offer.wholeValue { return nil }
            return ("{{\(variable)}}: \(root) offers \(fields.joined(separator: ", "))", nil)
        }
        if fields.isEmpty { return ("{{\(variable)}}: \(root) is a single value without fields; use {{\(root)}}", nil) }
        if fields.contains(path[1]) { return nil }
        return (
            "{{\(variable)}}: \(root) offers \(fields.joined(separator: ", "))",
            closestMatch(to: path[1], in: fields).map { "\(root).\($0)" }
        )
    }

    /// Every variable of every template in the node's scalars, placed at its `{{` when the scalar is one line of
    /// the file (else at the scalar).
    package static func variables(in node: ConfigNode, lines: [Substring]) -> [(String, SourceLocation)] {
        switch node.kind {
        case .scalar(let text, _):
            guard text.contains("{{"), let template = try? Template(text) else { return [] }
            var searchFrom = node.location.column
            return template.variables.map { name in
                var location = node.location
                if let column = column(of: name, line: node.location.line, from: searchFrom, lines: lines) {
                    location.column = column
                    searchFrom = column + 2
                }
                return (name, location)
            }
        case .sequence(let items): return items.flatMap { variables(in: $0, lines: lines) }
        case .mapping(let pairs): return pairs.flatMap { variables(in: $0.value, lines: lines) }
        }
    }

    /// The 1-based column (in Unicode scalars, as libyaml counts) of the `{{` that opens `name` on that line.
    private static func column(of name: String, line: Int, from start: Int, lines: [Substring]) -> Int? {
        guard line >= 1, line <= lines.count else { return nil }
        let scalars = Array(lines[line - 1].unicodeScalars)
        var index = max(start - 1, 0)
        while index + 1 < scalars.count {
            if scalars[index] == "{", scalars[index + 1] == "{" {
                let after = String(String.UnicodeScalarView(scalars[(index + 2)...]))
                if after.drop(while: { $0 == " " }).hasPrefix(name) { return index + 1 }
            }
            index += 1
        }
        return nil
    }
}
