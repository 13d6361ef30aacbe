import Foundation

/// One finding of `ingest lint`: an error (the file will not load) or a warning (it loads, but probably does not
/// do what was meant).
public struct PipelineLintIssue: Equatable, Sendable, CustomStringConvertible {
    public enum Severity: String, Sendable { case error, warning }

    public var severity: Severity
    public var location: SourceLocation?
    public var message: String
    public var suggestion: String?

    public init(severity: Severity, location: SourceLocation?, message: String, suggestion: String? = nil) {
        self.severity = severity
        self.location = location
        self.message = message
        self.suggestion = suggestion
    }

    init(error: PipelineFileError) {
        self.init(severity: .error, location: error.location, message: error.message, suggestion: error.suggestion)
    }

    /// `file:line:column: warning: message (did you mean 'x'?)`, the form compilers use, so editors link it.
    public var description: String {
        var text = location.map { "\($0): " } ?? ""
        text += "\(severity.rawValue): \(message)"
        if let suggestion { text += " (did you mean '\(suggestion)'?)" }
        return text
    }
}

extension Pipeline {
    /// Every error that stops the file from loading, or, when it loads, warnings about likely mistakes. In file
    /// order; the file is usable when no issue has severity `.error`. Lint needs no secrets: a variable unset inside
    /// a stage's options is a warning naming it (an error with `strictEnvironment`, for CI); one needed to load the
    /// file itself (`concurrency: ${N}`) stays an error.
    public static func lint(
        path: String, environment: [String: String] = ProcessInfo.processInfo.environment,
        strictEnvironment: Bool = false
    ) -> [PipelineLintIssue] {
        lintIssues(decodeFile(path: path, environment: environment, excuseUnset: true), strict: strictEnvironment)
    }

    /// `lint` for text already in memory; `source` names it in findings.
    public static func lint(
        yaml: String, source: String = "<memory>", environment: [String: String] = ProcessInfo.processInfo.environment,
        strictEnvironment: Bool = false
    ) -> [PipelineLintIssue] {
        lintIssues(
            decodeFile(yaml: yaml, source: source, environment: environment, excuseUnset: true),
            strict: strictEnvironment)
    }

    private static func lintIssues(_ decoded: DecodedFile, strict: Bool) -> [PipelineLintIssue] {
        let unset = decoded.unsetVariables.map {
            PipelineLintIssue(severity: strict ? .error : .warning, location: $0.location, message: $0.message)
        }
        guard let pipeline = decoded.pipeline, let document = decoded.document, decoded.errors.isEmpty else {
            return (unset + decoded.errors.map(PipelineLintIssue.init(error:))).sortedByLocation(\.location)
        }
        return (unset + PipelineLinter(pipeline: pipeline, root: document.root).warnings()).sortedByLocation(\.location)
    }
}

/// Warnings about a file that loads: each names a mistake seen in real pipelines, and none fires on a sensible
/// file (a warning that cannot be silenced by fixing the file would only teach users to ignore lint).
struct PipelineLinter {
    let pipeline: Pipeline
    let root: ConfigNode

    func warnings() -> [PipelineLintIssue] {
        let stageNodes = self.stageNodes()
        var issues: [PipelineLintIssue] = []
        func warn(_ location: SourceLocation, _ message: String) {
            issues.append(PipelineLintIssue(severity: .warning, location: location, message: message))
        }

        for (stage, options) in zip(pipeline.stages, stageNodes) where stage.name == ValidateStage.name {
            let rules = optionNames(options).filter { !["as", "sniff", "when"].contains($0) }
            if rules.isEmpty {
                warn(
                    stage.location,
                    "validate has no rules: it only checks that files are not empty and that their content matches "
                        + "their extension; add extensions, max_bytes, duration …")
            }
        }

        // `as` names given twice: later stages only see the last one.
        var named: [String: ConfiguredStage] = [:]
        for stage in pipeline.stages {
            guard let name = stage.resultName else { continue }
            if let earlier = named[name] {
                warn(
                    stage.location,
                    "'as: \(name)' is also used by the \(earlier.name) stage at line \(earlier.location.line); "
                        + "later stages see only this one")
            }
            named[name] = stage
        }

        // A template reading a stage's results before that stage runs is refused at load (`TemplateCheck`).
        for (stage, options) in zip(pipeline.stages, stageNodes) {
            // `verify:` is sent before the call it checks: the call's own answer is never there.
            if let own = stage.resultName, let verify = optionNode("verify", in: options) {
                for (reference, location) in templateRoots(in: verify) where reference == own {
                    warn(
                        location,
                        "verify: {{\(own).…}} is this stage's own answer, which does not exist yet when verify is "
                            + "sent (before the call); use what an earlier stage answered")
                }
            }
        }
        return issues.sortedByLocation(\.location)
    }

    /// Each stage item's options node, in the order of `pipeline.stages` (the file loaded, so the shapes hold).
    private func stageNodes() -> [ConfigNode] {
        guard case .mapping(let pairs) = root.kind,
            let stages = pairs.first(where: { $0.key.scalar == "stages" })?.value,
            case .sequence(let items) = stages.kind
        else { return [] }
        return items.compactMap { item in
            if case .mapping(let itemPairs) = item.kind { return itemPairs.first?.value }
            return nil
        }
    }

    private func optionNode(_ name: String, in node: ConfigNode) -> ConfigNode? {
        guard case .mapping(let pairs) = node.kind else { return nil }
        return pairs.first { $0.key.scalar == name }?.value
    }

    private func optionNames(_ node: ConfigNode) -> [String] {
        guard case .mapping(let pairs) = node.kind else { return [] }
        return pairs.compactMap(\.key.scalar)
    }

    /// The first path component of every `{{name.…}}` in the node's scalars, with the scalar's place.
    private func templateRoots(in node: ConfigNode) -> [(String, SourceLocation)] {
        switch node.kind {
        case .scalar(let text, _):
            var found: [(String, SourceLocation)] = []
            var rest = text[...]
            while let open = rest.range(of: "{{") {
                rest = rest[open.upperBound...]
                guard let close = rest.range(of: "}}") else { break }
                let inside = rest[..<close.lowerBound].trimmingCharacters(in: .whitespaces)
                let name = inside.prefix { $0 == "_" || $0.isLetter || $0.isNumber }
                if !name.isEmpty { found.append((String(name), node.location)) }
                rest = rest[close.upperBound...]
            }
            return found
        case .sequence(let items): return items.flatMap(templateRoots(in:))
        case .mapping(let pairs): return pairs.flatMap { templateRoots(in: $0.value) }
        }
    }
}
