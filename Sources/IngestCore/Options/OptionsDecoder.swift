/// Where a mapping stands in the file, which decides how the decoder reads and reports it. A stage's options
/// (and every mapping nested in options) are "options"; a stage that needs none may be written `- probe:` (null);
/// their first error is reported, since the rest often follow from it. The file's top level holds "keys", every
/// error under it is reported (one per stage, one per key), and a file that is not a mapping is told which keys it
/// needs (`fileTopLevel`, in IngestConfig).
package struct OptionsLevel: Sendable {
    /// "option" or "key".
    let noun: String
    /// Null reads as an empty mapping (`- probe:`).
    let nullIsEmpty: Bool
    /// An unknown name is quoted through `ConfigNode.echo` (cut when it is huge) rather than as written.
    let echoesUnknown: Bool
    /// Go on past the first error in this mapping (the top level), or stop there (options).
    let reportsEveryError: Bool
    /// The message for a node that is not a mapping, given the node and the names of the required fields.
    let notAMapping: @Sendable (_ found: ConfigNode, _ required: [String]) -> String

    package init(
        noun: String, nullIsEmpty: Bool, echoesUnknown: Bool, reportsEveryError: Bool,
        notAMapping: @escaping @Sendable (_ found: ConfigNode, _ required: [String]) -> String
    ) {
        self.noun = noun
        self.nullIsEmpty = nullIsEmpty
        self.echoesUnknown = echoesUnknown
        self.reportsEveryError = reportsEveryError
        self.notAMapping = notAMapping
    }

    /// A stage's options, and every mapping nested in them (`verify:`, `when:`, `input:` …).
    package static let options = OptionsLevel(
        noun: "option", nullIsEmpty: true, echoesUnknown: true, reportsEveryError: false
    ) { found, _ in
        "expected a mapping of options, found \(found.kindDescription)"
    }

    func unknown(_ key: ConfigNode, known: [String]) -> PipelineFileError {
        let name = key.scalar ?? ""
        let quoted = echoesUnknown ? ConfigNode.echo(name) : "'\(name)'"
        return key.error(
            "unknown \(noun) \(quoted); known: \(known.joined(separator: ", "))",
            suggestion: closestMatch(to: name, in: known))
    }
}

// The one decoder of the pipeline file: every mapping of named values (the top level, `input`, each stage's options
// and what nests in them) is read here, from its `fields`, in one pass that collects every error.
extension StageOptions {
    /// Starts from the defaults, assigns each key through its field, and reports unknown keys (with a suggestion),
    /// keys given twice, missing required ones and the values that do not decode, in file order: all of them, or
    /// the first (`OptionsLevel.reportsEveryError`). The cross-field `validate(at:)` runs only when all of that held
    /// and something was written. The value keeps whatever decoded.
    package init(from node: ConfigNode, level: OptionsLevel, errors: inout [PipelineFileError]) {
        self.init()
        let fields = Self.fields
        let before = errors.count
        var stopped: Bool { !level.reportsEveryError && errors.count > before }
        var seen = Set<String>()
        if case .mapping(let pairs) = node.kind {
            for (key, value) in pairs where !stopped {
                let name = key.scalar ?? ""
                if let field = fields.first(where: { $0.name == name }) {
                    guard seen.insert(name).inserted else {
                        errors.append(key.error("\(level.noun) '\(name)' is given twice"))
                        continue
                    }
                    field.assign(&self, value, &errors)
                } else {
                    errors.append(level.unknown(key, known: fields.map(\.name)))
                }
            }
        } else if !(node.isNull && level.nullIsEmpty) {
            errors.append(node.error(level.notAMapping(node, fields.filter(\.required).map(\.name))))
            return
        }
        for missing in fields where missing.required && !seen.contains(missing.name) && !stopped {
            errors.append(node.error("missing required \(level.noun) '\(missing.name)'"))
        }
        // Null (`- probe:`) takes every default as it is: the defaults need no cross-field check.
        guard errors.count == before, !node.isNull else { return }
        do {
            try validate(at: node)
        } catch {
            errors += PipelineFileError.collected(error, at: node)
        }
    }
}

extension OptionValue {
    /// Decodes one field's value, adding what is wrong to `errors`; nil when it did not decode. A collecting value
    /// (nested options, the list of stages) reports all its errors and is kept with whatever decoded.
    static func decodeField(_ node: ConfigNode, name: String, errors: inout [PipelineFileError]) -> Self? {
        if let collecting = Self.self as? any CollectingOptionValue.Type {
            return collecting.init(from: node, errors: &errors) as? Self
        }
        do {
            return try decodeInDefaultRange(node, name: name)
        } catch {
            errors += PipelineFileError.collected(error, at: node)
            return nil
        }
    }
}

extension PipelineFileError {
    /// The errors a throw carries: one, several (`PipelineFileErrors`), or another error placed at `node`.
    package static func collected(_ error: any Error, at node: ConfigNode) -> [PipelineFileError] {
        switch error {
        case let error as PipelineFileError: return [error]
        case let errors as PipelineFileErrors: return errors.errors
        default: return [node.error("\(error)")]
        }
    }
}
