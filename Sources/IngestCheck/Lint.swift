import Foundation
import IngestConfig
import IngestCore
import IngestStages
import IngestTemplates

/// One finding of `ingest lint`: an error (the file will not load), a warning (it loads, but probably does not
/// do what was meant), or a note (how the file will be read: which encoding rule a URL's template value gets).
package struct PipelineLintIssue: Equatable, Sendable, CustomStringConvertible {
    package enum Severity: String, Sendable { case error, warning, note }

    package var severity: Severity
    package var location: SourceLocation?
    package var message: String
    package var suggestion: String?

    package init(severity: Severity, location: SourceLocation?, message: String, suggestion: String? = nil) {
        self.severity = severity
        self.location = location
        self.message = message
        self.suggestion = suggestion
    }

    init(error: PipelineFileError) {
        self.init(severity: .error, location: error.location, message: error.message, suggestion: error.suggestion)
    }

    /// `file:line:column: warning: message (did you mean 'x'?)`, the form compilers use, so editors link it.
    package var description: String {
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
    /// A test file (`NAME.test.yml`, or a file of `cases` without `stages`) is checked as `ingest test` reads it.
    /// `notes`: also say, for each template value in a URL, how it is encoded there.
    package static func lint(
        path: String, environment: [String: String] = ProcessInfo.processInfo.environment,
        strictEnvironment: Bool = false, notes: Bool = false
    ) -> [PipelineLintIssue] {
        if PipelineTestFile.isTestFile(path: path) { return PipelineTestFile.lint(path: path) }
        return lintIssues(
            decodeFile(path: path, environment: environment, excuseUnset: true), strict: strictEnvironment,
            notes: notes)
    }

    /// `lint` for text already in memory; `source` names it in findings.
    package static func lint(
        yaml: String, source: String = "<memory>", environment: [String: String] = ProcessInfo.processInfo.environment,
        strictEnvironment: Bool = false, notes: Bool = false
    ) -> [PipelineLintIssue] {
        lintIssues(
            decodeFile(yaml: yaml, source: source, environment: environment, excuseUnset: true),
            strict: strictEnvironment, notes: notes)
    }

    private static func lintIssues(_ decoded: DecodedFile, strict: Bool, notes: Bool) -> [PipelineLintIssue] {
        let unset = decoded.unsetVariables.map {
            PipelineLintIssue(severity: strict ? .error : .warning, location: $0.location, message: $0.message)
        }
        guard let pipeline = decoded.pipeline, let document = decoded.document, decoded.errors.isEmpty else {
            return (unset + decoded.errors.map(PipelineLintIssue.init(error:))).sortedByLocation(\.location)
        }
        let linter = PipelineLinter(pipeline: pipeline, root: document.root)
        let urlNotes =
            notes ? linter.urlNotes(lines: decoded.yaml.split(separator: "\n", omittingEmptySubsequences: false)) : []
        return (unset + linter.warnings() + urlNotes).sortedByLocation(\.location)
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

    /// A note for each template value in a URL (a stage's `url`, a `verify:`'s `url`): where it stands and so how
    /// it is encoded (`URLPlacement`), at its `{{`.
    func urlNotes(lines: [Substring]) -> [PipelineLintIssue] {
        var notes: [PipelineLintIssue] = []
        for options in stageNodes() {
            let verifyURL = optionNode("verify", in: options).flatMap { optionNode("url", in: $0) }
            for node in [optionNode("url", in: options), verifyURL].compactMap({ $0 }) {
                guard let text = node.scalar, text.contains("{{"), let template = try? Template(text) else { continue }
                let locations = TemplateCheck.variables(in: node, lines: lines)
                for (index, placed) in template.urlPlacements.enumerated() {
                    notes.append(
                        PipelineLintIssue(
                            severity: .note, location: index < locations.count ? locations[index].1 : node.location,
                            message: placed.placement.rule(for: placed.variable, raw: placed.raw)))
                }
            }
        }
        return notes
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

    /// The first path component of every `{{name.…}}` in the node's scalars, with the scalar's place (read by the
    /// one template parser).
    private func templateRoots(in node: ConfigNode) -> [(String, SourceLocation)] {
        TemplateCheck.variables(in: node, lines: []).map { (String($0.0.prefix { $0 != "." }), $0.1) }
    }
}
