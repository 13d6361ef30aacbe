import Foundation
import IngestCore
import IngestFiles
import IngestStages

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

    /// What loading found: the pipeline when it decoded, every stage item as the decoder read it (for lint), and
    /// every error in file order.
    package struct DecodedFile {
        package var pipeline: Pipeline?
        package var stages: [StageEntry] = []
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
    /// network stages) and returned in `unsetVariables`; the stage it stopped from building is left out of the
    /// pipeline. A variable needed elsewhere (`concurrency: ${N}`) is still an error.
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
        // The one decoding pass: every later step reads its result, not the nodes.
        var decodingErrors: [PipelineFileError] = []
        var file = PipelineFileOptions(from: document.root, level: .fileTopLevel, errors: &decodingErrors)
        let unset = document.errors
        if offline || excuseUnset {
            let hadErrors = !decodingErrors.isEmpty
            document.excuseVariables(in: &file.stages.entries, decodingErrors: &decodingErrors, allStages: excuseUnset)
            // The file's own checks wait for a file without errors: leaving stages out may have made it one.
            if hadErrors, decodingErrors.isEmpty {
                do {
                    try file.validate(at: document.root)
                } catch {
                    decodingErrors += PipelineFileError.collected(error, at: document.root)
                }
            }
        }
        let excused = unset.filter { !document.errors.contains($0) }
        let templateErrors =
            TemplateCheck.errors(stages: file.stages.entries, yaml: yaml)
            + OutputCheck.errors(stages: file.stages.entries, yaml: yaml)
        // A scalar whose variable is missing still holds `${…}`: what decoding says about it, or about its stage's
        // options as a whole, repeats that error.
        let echoes = document.echoLocations(of: file.stages.entries)
        let relevant = decodingErrors.filter { error in !(error.location.map(echoes.contains) ?? false) }
        var errors: [PipelineFileError] = []
        // A missing variable in a YAML anchor is met once per alias: say it once.
        for error in (document.errors + relevant + templateErrors).sortedByLocation(\.location)
        where !errors.contains(error) {
            errors.append(error)
        }
        guard errors.isEmpty else {
            return DecodedFile(stages: file.stages.entries, errors: errors, unsetVariables: excused)
        }
        return DecodedFile(
            pipeline: file.pipeline(source: source, configHash: ConfigDigest.hash(document.root)),
            stages: file.stages.entries, errors: [], unsetVariables: excused, yaml: yaml)
    }
}

extension PipelineFileOptions {
    /// The plan the decoded file describes, with the stages that decoded and were not left out.
    func pipeline(source: String, configHash: String) -> Pipeline {
        var pipeline = Pipeline(
            version: version.value, name: name, input: input.spec, concurrency: concurrency, stages: stages.stages,
            source: source, dedupe: dedupe?.key, maxWorkBytes: maxWorkBytes?.bytes, configHash: configHash)
        pipeline.disposal = Disposal(onSuccess: onSuccess?.success, onFailureMoveTo: onFailure?.moveTo)
        pipeline.settle = settle?.seconds
        pipeline.bandwidth = bwlimit
        return pipeline
    }
}

extension ConfigDocument {
    /// Where decoding errors only repeat a missing variable: the scalars that still hold `${…}`, and the options
    /// of a stage holding one (its cross-option checks saw the `${…}` text: "bucket '${S3_BUCKET}' is not a valid
    /// name"). A block mapping starts at its first key, so an unknown first option of such a stage is held back
    /// too; the file is refused for the variable anyway, and the next load shows it.
    func echoLocations(of entries: [StageEntry]) -> Set<SourceLocation> {
        var echoes = Set(uninterpolated)
        guard !echoes.isEmpty else { return echoes }
        for entry in entries where !entry.isLeftOut {
            guard let options = entry.options else { continue }
            var inside = Set<SourceLocation>()
            entry.item.collectLocations(into: &inside)
            if !inside.isDisjoint(with: uninterpolated) { echoes.insert(options.location) }
        }
        return echoes
    }

    /// For a run without network stages (`ingest validate`): a variable missing only inside the options of a
    /// network stage (`request`, `upload`) is not an error, because nothing reads it. A variable also used
    /// elsewhere (through a YAML alias) stays required. Such a stage was decoded with the `${…}` text in place of
    /// the value; when that failed only because of it — at a scalar whose variable is missing, or in a check
    /// across its options (`validate(at:)`), which may depend on the value — the stage is left out of the pipeline
    /// and its errors out of `decodingErrors`. Any other error in the stage (an unknown option, a bad value written
    /// out) still counts. `allStages` (lint) treats every stage so, but keeps as an error a variable the stage
    /// cannot be built without (a number written `${N}`).
    mutating func excuseVariables(
        in entries: inout [StageEntry], decodingErrors: inout [PipelineFileError], allStages: Bool
    ) {
        guard !uninterpolated.isEmpty, case .mapping(let pairs) = root.kind else { return }
        // Only unset variables are excused: a malformed `${…}` is wrong whatever the environment holds.
        let missing = Set(uninterpolated).subtracting(malformed)
        func isExcusable(_ entry: StageEntry) -> Bool {
            entry.name != nil && (allStages || entry.descriptor?.usesNetwork == true)
        }
        // Missing variables also read outside such stages (an alias of an anchor inside one) stay errors.
        var readElsewhere = Set<SourceLocation>()
        for (key, value) in pairs where key.scalar != "stages" { value.collectLocations(into: &readElsewhere) }
        for entry in entries where !isExcusable(entry) { entry.item.collectLocations(into: &readElsewhere) }

        for index in entries.indices where isExcusable(entries[index]) {
            var inside = Set<SourceLocation>()
            entries[index].item.collectLocations(into: &inside)
            let excused = inside.intersection(missing).subtracting(readElsewhere)
            guard !excused.isEmpty, let optionsAt = entries[index].options?.location else { continue }
            let removed = errors.filter { $0.location.map(excused.contains) ?? false }
            errors.removeAll { $0.location.map(excused.contains) ?? false }
            let errorsOfStage = entries[index].errors
            guard !errorsOfStage.isEmpty else { continue }
            // Lint: a value the stage cannot be built without (a number written `${N}`) stays an error.
            let needed = Set(errorsOfStage.compactMap(\.location)).intersection(excused)
            if allStages, !needed.isEmpty {
                errors += removed.filter { $0.location.map(needed.contains) ?? false }
                continue
            }
            let onlyExcused = errorsOfStage.allSatisfy { error in
                error.location.map { excused.contains($0) || $0 == optionsAt } ?? false
            }
            guard onlyExcused else { continue }
            entries[index].isLeftOut = true
            for error in errorsOfStage {
                if let at = decodingErrors.firstIndex(of: error) { decodingErrors.remove(at: at) }
            }
        }
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
