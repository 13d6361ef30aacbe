import Foundation
import IngestCore
import IngestStages
import IngestTemplates

/// One item of `stages:` as the one decoder read it, kept whether or not it decoded: load builds the pipeline
/// from `configured`, and the template check, the excusing of unset variables and lint read the rest, so nothing
/// after the decoder walks the `stages` node again.
package struct StageEntry: Sendable {
    /// The list item (`- upload: {…}`).
    package var item: ConfigNode
    /// The stage name as written, when the item has the shape `name: options` (a mapping with one key).
    package var name: String?
    /// The options node under the name (null for `- probe:`), when the item has that shape.
    package var options: ConfigNode?
    /// The registered stage of that name.
    package var descriptor: StageDescriptor?
    /// `as:` as written, whether or not it is a valid name: what later templates read under it.
    package var writtenResultName: String?
    /// The stage, when it decoded.
    package var configured: ConfiguredStage?
    /// What decoding found wrong in this item (the file's errors hold them too).
    package var errors: [PipelineFileError] = []
    /// Set by load for a network stage left out of an offline run (`ingest validate`) or lint because it cannot be
    /// built without an unset variable: it is not in the pipeline, and its errors are not the file's.
    package var isLeftOut = false

    /// The stage's own option nodes by name (`as` and `when` included), for lint.
    package func optionNode(_ name: String) -> ConfigNode? {
        guard case .mapping(let pairs)? = options?.kind else { return nil }
        return pairs.first { $0.key.scalar == name }?.value
    }

    /// The names of the options written, in file order.
    package var optionNames: [String] {
        guard case .mapping(let pairs)? = options?.kind else { return [] }
        return pairs.compactMap(\.key.scalar)
    }
}

/// `as:` and `when:`, the options every stage takes besides its own: one spec for decoding and the schema.
struct CommonStageOptions: StageOptions, Sendable {
    var resultName: ResultName?
    var condition: StageCondition?

    init() {}

    static var fields: [OptionField<CommonStageOptions>] {
        [
            OptionField(
                "as", \.resultName,
                doc: "Name the stage's results are stored under, for later templates (`{{ticket.upload_url}}`)."),
            OptionField("when", \.condition, doc: "The files the stage applies to; others go past it untouched."),
        ]
    }

    static var names: Set<String> { Set(fields.map(\.name)) }

    /// What an error of a common option says after the stage's name (`upload: when: …`); `as:`'s own messages
    /// name it and are left as they are.
    static let messagePrefix = ["when": "when: "]
}

/// `as:` — a name of letters, digits and '_' that does not start with a digit.
struct ResultName: OptionValue, Sendable {
    var text = ""

    init(from node: ConfigNode) throws {
        let text = try String(from: node)
        guard ResultName.isIdentifier(text) else {
            throw node.error(
                "'as' must be a name of letters, digits and '_' that does not start with a digit, found '\(text)'")
        }
        self.text = text
    }

    static var jsonSchema: JSONValue { ["type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"] }

    static func isIdentifier(_ text: String) -> Bool {
        guard let first = text.first, first == "_" || (first.isASCII && first.isLetter) else { return false }
        return text.allSatisfy { $0 == "_" || ($0.isASCII && ($0.isLetter || $0.isNumber)) }
    }
}

extension StageEntry {
    /// Decodes one list item: a one-key mapping `stage-name: {options}` (or `stage-name:` for no options), with
    /// the common `as: NAME` and `when: {…}` among the options. Every problem of the item is collected.
    init(item: ConfigNode) {
        self.item = item
        guard case .mapping(let pairs) = item.kind, pairs.count == 1, let (key, value) = pairs.first else {
            errors = [Self.shapeError(item)]
            return
        }
        name = key.scalar
        options = value
        let stageName = key.scalar ?? ""
        descriptor = StageRegistry.descriptor(named: stageName)
        if case .mapping(let optionPairs) = value.kind {
            writtenResultName = optionPairs.first { $0.key.scalar == "as" }?.value.scalar
        }
        guard let descriptor else {
            errors = [
                key.error(
                    "unknown stage \(ConfigNode.echo(stageName)); known: \(StageRegistry.names.joined(separator: ", "))",
                    suggestion: closestMatch(to: stageName, in: StageRegistry.names))
            ]
            return
        }
        var common = CommonStageOptions()
        var own = value
        // Like any options, a stage item reports its first error: `as`, then `when`, then the stage's own.
        if case .mapping(let optionPairs) = value.kind {
            for field in CommonStageOptions.fields {
                guard let given = optionPairs.first(where: { $0.key.scalar == field.name }) else { continue }
                var found: [PipelineFileError] = []
                field.assign(&common, given.value, &found)
                guard let first = found.first else { continue }
                let inner = CommonStageOptions.messagePrefix[field.name]
                errors = [inner.map { Self.prefixed(first, stage: stageName, $0) } ?? first]
                return
            }
            own = ConfigNode(
                .mapping(optionPairs.filter { !CommonStageOptions.names.contains($0.key.scalar ?? "") }),
                at: value.location)
        }
        var found: [PipelineFileError] = []
        let stage = descriptor.instantiate(own, errors: &found)
        errors = found.map { Self.prefixed($0, stage: stageName) }
        guard let stage, errors.isEmpty else { return }
        configured = ConfiguredStage(
            name: stageName, stage: stage, usesNetwork: descriptor.usesNetwork,
            resultName: common.resultName?.text, location: key.location, writesWorkFiles: descriptor.writesWorkFiles,
            condition: common.condition)
    }

    /// The error with the stage's name (and `inner`, `when: `) in front, unless it names the stage already.
    private static func prefixed(_ error: PipelineFileError, stage: String, _ inner: String = "") -> PipelineFileError {
        guard !error.message.hasPrefix("\(stage): ") else { return error }
        var error = error
        error.message = "\(stage): \(inner)\(error.message)"
        return error
    }

    /// Why an item is not a stage: not a mapping, an empty one, or one with options beside the name.
    private static func shapeError(_ item: ConfigNode) -> PipelineFileError {
        let example = "'- validate: {max_bytes: 100MB}' or '- probe:'"
        guard case .mapping(let pairs) = item.kind else {
            if let name = item.scalar, StageRegistry.descriptor(named: name) != nil {
                return item.error("a stage is a mapping: write '- \(name):' (with a colon)")
            }
            return item.error("expected a stage such as \(example), found \(item.kindDescription)")
        }
        guard pairs.count > 1 else { return item.error("expected a stage such as \(example), found an empty mapping") }
        let keys = pairs.map { "'\($0.key.scalar ?? "?")'" }.joined(separator: ", ")
        return pairs[1].key.error(
            "a stage item has exactly one key, the stage name, but this one has \(pairs.count): \(keys); "
                + "indent the options under the stage name")
    }
}
