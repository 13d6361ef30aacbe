import Foundation
import IngestCore
import IngestStages
internal import Yams

/// A pipeline file as `ConfigNode`s: YAML composed by Yams, positions kept (1-based line and column), and
/// `${VAR}` interpolated into values. Yams' types stop here, so option decoding never sees them.
package struct ConfigDocument {
    package var root: ConfigNode
    /// Interpolation failures (a variable that is not set …). Loading still decodes the rest of the file so the
    /// user sees every problem at once.
    var errors: [PipelineFileError]
    /// Scalars whose interpolation failed: they keep their raw text, and decoding errors about them are noise.
    var uninterpolated: [SourceLocation]
    /// Those of them whose `${…}` is malformed: a mistake in the file, never excused (unlike a variable unset).
    var malformed: [SourceLocation] = []
}

package enum ConfigLoader {
    /// Nodes one file may expand to. Aliases are expanded, and a few nested ones ("billion laughs") would
    /// otherwise make a tiny file take all memory.
    static let nodeLimit = 100_000

    /// Composes and converts the first YAML document; throws `PipelineFileError` for a YAML syntax error.
    package static func compose(yaml: String, source: String, environment: [String: String]) throws -> ConfigDocument {
        let composed: Node?
        do {
            // The basic resolver: scalars stay text (options decode them), and Yams' default one compiles ICU
            // regular expressions at first use, which costs every run about 2 MiB of resident memory.
            composed = try Yams.compose(yaml: yaml, .basic)
        } catch let error as YamlError {
            throw syntaxError(error, yaml: yaml, source: source)
        }
        var converter = Converter(source: source, environment: environment)
        guard let composed else {
            let empty = ConfigNode(.scalar("", plain: true), at: SourceLocation(file: source, line: 1, column: 1))
            return ConfigDocument(root: empty, errors: [], uninterpolated: [])
        }
        let root = try converter.convert(composed, isKey: false)
        return ConfigDocument(
            root: root, errors: converter.errors, uninterpolated: converter.uninterpolated,
            malformed: converter.malformed)
    }

    /// A Yams error as a located pipeline-file error: libyaml's problem, plus its context ("while parsing a block
    /// mapping") and where that context started.
    static func syntaxError(_ error: YamlError, yaml: String, source: String) -> PipelineFileError {
        func located(_ mark: Mark) -> SourceLocation {
            SourceLocation(file: source, line: mark.line, column: mark.column)
        }
        switch error {
        case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _),
            .composer(let context, let problem, let mark, _):
            var message = "invalid YAML: \(problem)"
            if let context {
                message += " (\(context.text) at line \(context.mark.line), column \(context.mark.column))"
            }
            if character(at: mark, in: yaml) == "\t" { message += "; YAML indents with spaces, not tabs" }
            return PipelineFileError(location: located(mark), message: message)
        case .reader(let problem, let offset, _, _):
            let location = offset.map { offset -> SourceLocation in
                let prefix = yaml.prefix(offset)
                let line = prefix.reduce(1) { $1 == "\n" ? $0 + 1 : $0 }
                let column =
                    prefix.count
                    - (prefix.lastIndex(of: "\n").map { prefix.distance(from: prefix.startIndex, to: $0) + 1 } ?? 0) + 1
                return SourceLocation(file: source, line: line, column: column)
            }
            return PipelineFileError(location: location, message: "cannot read the file as YAML text: \(problem)")
        case .duplicatedKeysInMapping(let duplicates, let context):
            let keys = duplicates.map { "'\($0)'" }.joined(separator: ", ")
            return PipelineFileError(
                location: located(context.mark),
                message: "key \(keys) appears more than once in the same mapping")
        default:
            return PipelineFileError(location: SourceLocation(file: source, line: 1, column: 1), message: "\(error)")
        }
    }

    /// The character a Yams mark points at (libyaml counts columns in Unicode scalars).
    private static func character(at mark: Mark, in yaml: String) -> Unicode.Scalar? {
        let lines = yaml.split(separator: "\n", omittingEmptySubsequences: false)
        guard mark.line >= 1, mark.line <= lines.count else { return nil }
        let scalars = Array(lines[mark.line - 1].unicodeScalars)
        return mark.column >= 1 && mark.column <= scalars.count ? scalars[mark.column - 1] : nil
    }

    private struct Converter {
        let source: String
        let environment: [String: String]
        package var errors: [PipelineFileError] = []
        var uninterpolated: [SourceLocation] = []
        var malformed: [SourceLocation] = []
        var nodeCount = 0

        init(source: String, environment: [String: String]) {
            self.source = source
            self.environment = environment
        }

        func location(_ node: Node) -> SourceLocation {
            SourceLocation(file: source, line: node.mark?.line ?? 1, column: node.mark?.column ?? 1)
        }

        mutating func convert(_ node: Node, isKey: Bool) throws -> ConfigNode {
            nodeCount += 1
            let here = location(node)
            if nodeCount > ConfigLoader.nodeLimit {
                throw PipelineFileError(
                    location: here, message: "the file expands to more than \(ConfigLoader.nodeLimit) values (aliases?)"
                )
            }
            switch node {
            case .scalar(let scalar):
                let plain = scalar.style == .plain
                // Keys are names, not values: they are never interpolated (as in Compose).
                if isKey { return ConfigNode(.scalar(scalar.string, plain: plain), at: here) }
                do {
                    let text = try Interpolation.expand(scalar.string, environment: environment)
                    var converted = ConfigNode(.scalar(text, plain: plain), at: here)
                    converted.variables = Interpolation.variables(in: scalar.string)
                    return converted
                } catch let failure as Interpolation.Failure {
                    errors.append(PipelineFileError(location: here, message: failure.message))
                    uninterpolated.append(here)
                    if case .malformed = failure { malformed.append(here) }
                    return ConfigNode(.scalar(scalar.string, plain: plain), at: here)
                }
            case .sequence(let sequence):
                return ConfigNode(.sequence(try sequence.map { try convert($0, isKey: false) }), at: here)
            case .mapping(let mapping):
                return ConfigNode(.mapping(try convertPairs(Array(mapping))), at: here)
            case .alias:
                // Yams resolves aliases while composing; an unresolved one is a bug in the file's anchors.
                throw PipelineFileError(location: here, message: "alias could not be resolved")
            }
        }

        /// Converts a mapping's pairs, applying YAML merge keys (`<<: *defaults`): keys written in the mapping win
        /// over merged ones, and earlier merged mappings win over later ones.
        mutating func convertPairs(_ pairs: [(key: Node, value: Node)]) throws -> [(key: ConfigNode, value: ConfigNode)]
        {
            func isMergeKey(_ node: Node) -> Bool {
                if case .scalar(let scalar) = node { return scalar.style == .plain && scalar.string == "<<" }
                return false
            }
            let explicitKeys = Set(pairs.filter { !isMergeKey($0.key) }.compactMap { $0.key.string })
            var merged = Set<String>()
            var result: [(key: ConfigNode, value: ConfigNode)] = []
            for (key, value) in pairs {
                guard isMergeKey(key) else {
                    result.append((try convert(key, isKey: true), try convert(value, isKey: false)))
                    continue
                }
                let sources: [Node]
                switch value {
                case .mapping: sources = [value]
                case .sequence(let sequence) where sequence.allSatisfy({ $0.mapping != nil }): sources = Array(sequence)
                default:
                    throw PipelineFileError(
                        location: location(value), message: "a merge key '<<' takes a mapping or a list of mappings")
                }
                for case .mapping(let mapping) in sources {
                    for pair in try convertPairs(Array(mapping)) {
                        let name = pair.key.scalar ?? ""
                        if explicitKeys.contains(name) || !merged.insert(name).inserted { continue }
                        result.append(pair)
                    }
                }
            }
            return result
        }
    }
}
