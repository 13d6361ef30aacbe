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
                    return ConfigNode(.scalar(text, plain: plain), at: here)
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

extension Pipeline {
    /// Reads, interpolates and checks a pipeline file. Throws `PipelineFileErrors` with every problem found (each
    /// with file, line and column); nothing runs from an invalid file.
    ///
    /// `offline` is for a run that leaves network stages out (`ingest validate`): a variable that is missing only
    /// inside `request` or `upload` options is then no error, since nothing will read it (CI validates without the
    /// backend's secrets). A network stage that cannot be built without its variables is left out of the pipeline;
    /// its other errors (an unknown option …) are still reported.
    ///
    /// - Parameters:
    ///   - path: The pipeline file (`pipelines/preflight.yml`).
    ///   - environment: What `${VAR}` reads; the process environment by default.
    ///   - offline: Leave network stages out, as `ingest validate` does.
    /// - Returns: The loaded plan, ready for a `Runner`.
    /// - Throws: `PipelineFileErrors` naming every problem; a file that cannot be read is one of them.
    public static func load(
        path: String, environment: [String: String] = ProcessInfo.processInfo.environment, offline: Bool = false
    ) throws -> Pipeline {
        let decoded = decodeFile(path: path, environment: environment, offline: offline)
        guard let pipeline = decoded.pipeline, decoded.errors.isEmpty else { throw PipelineFileErrors(decoded.errors) }
        return pipeline
    }

    /// `load` for text already in memory; `source` names it in errors.
    ///
    /// - Parameters:
    ///   - yaml: The pipeline as YAML text.
    ///   - source: The name errors give the text.
    ///   - environment: What `${VAR}` reads; the process environment by default.
    ///   - offline: Leave network stages out, as `ingest validate` does.
    /// - Throws: `PipelineFileErrors` naming every problem.
    public static func parse(
        yaml: String, source: String = "<memory>", environment: [String: String] = ProcessInfo.processInfo.environment,
        offline: Bool = false
    ) throws -> Pipeline {
        let decoded = decodeFile(yaml: yaml, source: source, environment: environment, offline: offline)
        guard let pipeline = decoded.pipeline, decoded.errors.isEmpty else { throw PipelineFileErrors(decoded.errors) }
        return pipeline
    }

    /// What loading found: the pipeline when it decoded, the file's nodes (for lint), and every error in file order.
    package struct DecodedFile {
        package var pipeline: Pipeline?
        package var document: ConfigDocument?
        package var errors: [PipelineFileError]
        /// Unset variables `lint` went on without (`excuseUnset`): each names the variable, at its scalar.
        package var unsetVariables: [PipelineFileError] = []
        /// The file's text, for lint's columns.
        package var yaml = ""
    }

    package static func decodeFile(
        path: String, environment: [String: String], offline: Bool = false, excuseUnset: Bool = false
    ) -> DecodedFile {
        let yaml: String
        do {
            yaml = try PipelineFileReader.read(path: path)
        } catch {
            return DecodedFile(errors: [error])
        }
        return decodeFile(
            yaml: yaml, source: path, environment: environment, offline: offline, excuseUnset: excuseUnset)
    }

    /// `excuseUnset` is lint's: an unset variable inside any stage's options is set aside (as `offline` does for
    /// network stages) and returned in `unsetVariables`; the stage it stopped from building stays as a stand-in so
    /// the stages keep their places. A variable needed elsewhere (`concurrency: ${N}`) is still an error.
    package static func decodeFile(
        yaml: String, source: String, environment: [String: String], offline: Bool = false, excuseUnset: Bool = false
    ) -> DecodedFile {
        var document: ConfigDocument
        do {
            document = try ConfigLoader.compose(yaml: yaml, source: source, environment: environment)
        } catch let error as PipelineFileError {
            return DecodedFile(errors: [error])
        } catch {
            return DecodedFile(errors: [PipelineFileError(location: nil, message: "\(source): \(error)")])
        }
        let written = document.root
        let unset = document.errors
        let leftOut =
            offline || excuseUnset ? document.excuseVariablesOfNetworkStages(allStages: excuseUnset) : []
        let excused = unset.filter { !document.errors.contains($0) }
        let templateErrors = TemplateCheck.errors(root: written, yaml: yaml)
        let (file, decodingErrors) = PipelineFileOptions.decodeCollectingErrors(from: document.root)
        // A scalar whose variable is missing still holds `${…}`: what decoding says about it, or about its stage's
        // options as a whole, repeats that error.
        let echoes = document.echoLocations
        let relevant = decodingErrors.filter { error in !(error.location.map(echoes.contains) ?? false) }
        var errors: [PipelineFileError] = []
        // A missing variable in a YAML anchor is met once per alias: say it once.
        for error in (document.errors + relevant + templateErrors).sortedByLocation(\.location)
        where !errors.contains(error) {
            errors.append(error)
        }
        guard errors.isEmpty else {
            return DecodedFile(document: document, errors: errors, unsetVariables: excused)
        }
        var stages = file.stages.stages
        if !excuseUnset { for index in leftOut.sorted(by: >) { stages.remove(at: index) } }
        var pipeline = Pipeline(
            version: file.version.value, name: file.name, input: file.input.spec,
            concurrency: file.concurrency, stages: stages, source: source,
            dedupe: file.dedupe?.key, maxWorkBytes: file.maxWorkBytes?.bytes,
            configHash: ConfigDigest.hash(written))
        pipeline.disposal = Disposal(onSuccess: file.onSuccess?.success, onFailureMoveTo: file.onFailure?.moveTo)
        pipeline.settle = file.settle?.seconds
        pipeline.bandwidth = file.bwlimit
        return DecodedFile(pipeline: pipeline, document: document, errors: [], unsetVariables: excused, yaml: yaml)
    }
}

extension ConfigDocument {
    /// Where decoding errors only repeat a missing variable: the scalars that still hold `${…}`, and the options
    /// of a stage holding one (its cross-option checks saw the `${…}` text: "bucket '${S3_BUCKET}' is not a valid
    /// name"). A block mapping starts at its first key, so an unknown first option of such a stage is held back
    /// too; the file is refused for the variable anyway, and the next load shows it.
    var echoLocations: Set<SourceLocation> {
        var echoes = Set(uninterpolated)
        guard !echoes.isEmpty, case .mapping(let pairs) = root.kind,
            case .sequence(let items)? = pairs.first(where: { $0.key.scalar == "stages" })?.value.kind
        else { return echoes }
        for item in items {
            guard case .mapping(let stage) = item.kind, stage.count == 1 else { continue }
            var inside = Set<SourceLocation>()
            item.collectLocations(into: &inside)
            if !inside.isDisjoint(with: uninterpolated) { echoes.insert(stage[0].value.location) }
        }
        return echoes
    }

    /// For a run without network stages (`ingest validate`): a variable missing only inside the options of a
    /// network stage (`request`, `upload`) is not an error, because nothing reads it. A variable also used
    /// elsewhere (through a YAML alias) stays required. Such a stage is still checked with the `${…}` text in
    /// place of the value; when that fails only because of it — at a scalar whose variable is missing, or in a
    /// check across its options (`validate(at:)`), which may depend on the value — the stage's item is swapped for
    /// a stand-in that decodes, and its index is returned so the caller drops it from the pipeline. Any other error
    /// in the stage (an unknown option, a bad value written out) still counts.
    mutating func excuseVariablesOfNetworkStages(allStages: Bool = false) -> [Int] {
        guard !uninterpolated.isEmpty, case .mapping(var pairs) = root.kind,
            let stagesAt = pairs.firstIndex(where: { $0.key.scalar == "stages" }),
            case .sequence(var items) = pairs[stagesAt].value.kind
        else { return [] }
        // Only unset variables are excused: a malformed `${…}` is wrong whatever the environment holds.
        let missing = Set(uninterpolated).subtracting(malformed)
        func isNetworkStage(_ item: ConfigNode) -> Bool {
            guard case .mapping(let stage) = item.kind, stage.count == 1, let name = stage[0].key.scalar else {
                return false
            }
            return allStages || StageRegistry.descriptor(named: name)?.usesNetwork == true
        }
        // Missing variables also read outside network stages (an alias of an anchor inside one) stay errors.
        var readElsewhere = Set<SourceLocation>()
        for (key, value) in pairs where key.scalar != "stages" { value.collectLocations(into: &readElsewhere) }
        for item in items where !isNetworkStage(item) { item.collectLocations(into: &readElsewhere) }

        var leftOut: [Int] = []
        for (index, item) in items.enumerated() where isNetworkStage(item) {
            var inside = Set<SourceLocation>()
            item.collectLocations(into: &inside)
            let excused = inside.intersection(missing).subtracting(readElsewhere)
            guard !excused.isEmpty, case .mapping(let stage) = item.kind else { continue }
            let removed = errors.filter { $0.location.map(excused.contains) ?? false }
            errors.removeAll { $0.location.map(excused.contains) ?? false }
            guard let errorsOfStage = Self.decodingErrors(of: item) else { continue }
            // Lint: a value the stage cannot be built without (a number written `${N}`) stays an error.
            let needed = Set(errorsOfStage.compactMap(\.location)).intersection(excused)
            if allStages, !needed.isEmpty {
                errors += removed.filter { $0.location.map(needed.contains) ?? false }
                continue
            }
            let optionsAt = stage[0].value.location
            let onlyExcused = errorsOfStage.allSatisfy { error in
                error.location.map { excused.contains($0) || $0 == optionsAt } ?? false
            }
            guard onlyExcused else { continue }
            items[index] = Self.standIn(for: item, key: stage[0].key, optionsAt: optionsAt)
            leftOut.append(index)
        }
        pairs[stagesAt].value = ConfigNode(.sequence(items), at: pairs[stagesAt].value.location)
        root = ConfigNode(.mapping(pairs), at: root.location)
        return leftOut
    }

    /// The errors building the stage from `item` gives; nil when it builds (or fails in another way).
    private static func decodingErrors(of item: ConfigNode) -> [PipelineFileError]? {
        do {
            _ = try ConfiguredStage(item: item)
            return nil
        } catch let error as PipelineFileError {
            return [error]
        } catch let error as PipelineFileErrors {
            return error.errors
        } catch {
            return nil
        }
    }

    /// A `probe` stage in place of an excused one: decoding keeps the list's order and count; the stand-in is
    /// dropped again afterwards.
    private static func standIn(for item: ConfigNode, key: ConfigNode, optionsAt: SourceLocation) -> ConfigNode {
        ConfigNode(
            .mapping([
                (
                    key: ConfigNode(.scalar(ProbeStage.name, plain: true), at: key.location),
                    value: ConfigNode(.scalar("", plain: true), at: optionsAt)
                )
            ]), at: item.location)
    }
}

extension ConfigNode {
    /// The place of this node and of every node inside it.
    func collectLocations(into locations: inout Set<SourceLocation>) {
        locations.insert(location)
        switch kind {
        case .scalar: break
        case .sequence(let items): for item in items { item.collectLocations(into: &locations) }
        case .mapping(let pairs):
            for (key, value) in pairs {
                key.collectLocations(into: &locations)
                value.collectLocations(into: &locations)
            }
        }
    }
}

extension Array {
    /// File order (line, then column) of errors or lint issues; those without a place come first. Stable for equal
    /// places.
    package func sortedByLocation(_ location: (Element) -> SourceLocation?) -> [Element] {
        enumerated().sorted { lhs, rhs in
            let (leftPlace, rightPlace) = (location(lhs.element), location(rhs.element))
            let left = (leftPlace?.line ?? 0, leftPlace?.column ?? 0, lhs.offset)
            let right = (rightPlace?.line ?? 0, rightPlace?.column ?? 0, rhs.offset)
            return left < right
        }.map(\.element)
    }
}

/// The canonical text of the parts of a pipeline file that decide a file's result, hashed for the journal. Mapping
/// keys are sorted (reordering options changes nothing); list order is kept (stage order matters).
enum ConfigDigest {
    static let keys: Set<String> = ["version", "stages", "dedupe"]

    static func hash(_ root: ConfigNode) -> String {
        guard case .mapping(let pairs) = root.kind else { return ContentHash.sha256(text: canonical(root)) }
        let kept = pairs.filter { keys.contains($0.key.scalar ?? "") }
        return ContentHash.sha256(text: canonical(ConfigNode(.mapping(kept), at: root.location)))
    }

    static func canonical(_ node: ConfigNode) -> String {
        switch node.kind {
        case .scalar(let text, _):
            var out = ""
            JSONValue.writeString(node.isNull ? "" : text, to: &out)
            return out
        case .sequence(let items): return "[" + items.map(canonical).joined(separator: ",") + "]"
        case .mapping(let pairs):
            let sorted = pairs.map { (key: $0.key.scalar ?? "", value: canonical($0.value)) }.sorted { $0.key < $1.key }
            return "{"
                + sorted.map { pair -> String in
                    var key = ""
                    JSONValue.writeString(pair.key, to: &key)
                    return key + ":" + pair.value
                }.joined(separator: ",") + "}"
        }
    }
}
