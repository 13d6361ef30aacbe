import Foundation
import IngestCore
import IngestStages

/// Checks named outputs at load time: every `upload: { output: NAME }` and `{{outputs.NAME.field}}` names an
/// output an earlier stage makes (`poster`, `thumbnails`, or `video`/`audio`/`jpeg` with `output:`), with a field
/// outputs offer; and no two stages make the same name.
package enum OutputCheck {
    static func errors(stages entries: [StageEntry], yaml: String) -> [PipelineFileError] {
        let lines = yaml.split(separator: "\n", omittingEmptySubsequences: false)
        var made: [String] = []
        var errors: [PipelineFileError] = []
        for entry in entries {
            guard let stage = entry.name, let options = entry.options else { continue }
            let outputNode = options.mappingValue("output")
            for (variable, location) in TemplateCheck.variables(in: options, lines: lines) {
                if let message = problem(variable, made: made) {
                    errors.append(PipelineFileError(location: location, message: message.0, suggestion: message.1))
                }
            }
            if stage == UploadStage.name, let node = outputNode, let name = node.scalar, !made.contains(name) {
                errors.append(
                    node.error(
                        "upload output '\(name)': no earlier stage makes it; made here: \(listed(made))",
                        suggestion: closestMatch(to: name, in: made)))
            }
            guard let name = madeName(stage: stage, given: outputNode?.scalar) else { continue }
            if made.contains(name) {
                errors.append((outputNode ?? options).error("output '\(name)' is made by two stages; name one apart"))
            }
            made.append(name)
        }
        return errors
    }

    /// The output a stage makes: `poster` and `thumbnails` always (their default names), the others when given.
    static func madeName(stage: String, given: String?) -> String? {
        switch stage {
        case PosterStage.name: return given ?? "poster"
        case ThumbnailsStage.name: return given ?? "sheet"
        case _ where ItemOutputs.makers.contains(stage): return given
        default: return nil
        }
    }

    private static func problem(_ variable: String, made: [String]) -> (String, String?)? {
        let path = variable.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard path[0] == "outputs" else { return nil }
        guard path.count >= 3 else {
            return ("{{\(variable)}} needs an output and a field, as in {{outputs.poster.size}}", nil)
        }
        guard made.contains(path[1]) else {
            return (
                "{{\(variable)}}: no earlier stage makes output '\(path[1])'; made here: \(listed(made))",
                closestMatch(to: path[1], in: made).map { "outputs.\($0).\(path[2])" }
            )
        }
        guard ItemOutputs.fields.contains(path[2]) else {
            return (
                "{{\(variable)}}: outputs offer \(ItemOutputs.fields.joined(separator: ", "))",
                closestMatch(to: path[2], in: ItemOutputs.fields).map { "outputs.\(path[1]).\($0)" }
            )
        }
        return nil
    }

    private static func listed(_ names: [String]) -> String { names.isEmpty ? "none" : names.joined(separator: ", ") }
}

extension ConfigNode {
    /// The value under `key` when this is a mapping.
    fileprivate func mappingValue(_ key: String) -> ConfigNode? {
        guard case .mapping(let pairs) = kind else { return nil }
        return pairs.first { $0.key.scalar == key }?.value
    }
}
