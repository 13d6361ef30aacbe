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
    /// file itself (`concurrency: ${N}`) stays an error. So are the other things `ingest run` reads from the
    /// environment: an S3 upload's credentials and region, `{{env.NAME}}` (`EnvironmentLint`).
    /// A test file (`NAME.test.yml`, or a file of `cases` without `stages`) is checked as `ingest test` reads it.
    /// `notes`: also say, for each template value in a URL, how it is encoded there.
    package static func lint(
        path: String, environment: [String: String] = ProcessInfo.processInfo.environment,
        strictEnvironment: Bool = false, notes: Bool = false
    ) -> [PipelineLintIssue] {
        if PipelineTestFile.isTestFile(path: path) { return PipelineTestFile.lint(path: path) }
        return lintIssues(
            decodeFile(path: path, environment: environment, excuseUnset: true), environment: environment,
            strict: strictEnvironment, notes: notes)
    }

    /// `lint` for text already in memory; `source` names it in findings.
    package static func lint(
        yaml: String, source: String = "<memory>", environment: [String: String] = ProcessInfo.processInfo.environment,
        strictEnvironment: Bool = false, notes: Bool = false
    ) -> [PipelineLintIssue] {
        lintIssues(
            decodeFile(yaml: yaml, source: source, environment: environment, excuseUnset: true),
            environment: environment, strict: strictEnvironment, notes: notes)
    }

    private static func lintIssues(
        _ decoded: DecodedFile, environment: [String: String], strict: Bool, notes: Bool
    ) -> [PipelineLintIssue] {
        let unset = decoded.unsetVariables.map {
            PipelineLintIssue(severity: strict ? .error : .warning, location: $0.location, message: $0.message)
        }
        guard decoded.pipeline != nil, decoded.errors.isEmpty else {
            return (unset + decoded.errors.map(PipelineLintIssue.init(error:))).sortedByLocation(\.location)
        }
        let linter = PipelineLinter(stages: decoded.stages.filter { $0.configured != nil && !$0.isLeftOut })
        let urlNotes =
            notes ? linter.urlNotes(lines: decoded.yaml.split(separator: "\n", omittingEmptySubsequences: false)) : []
        let disposal =
            decoded.pipeline.map {
                DisposalLint.issues($0, stages: decoded.stages, yaml: decoded.yaml, notes: notes)
            } ?? []
        let needed = EnvironmentLint(stages: decoded.stages, environment: environment).issues(strict: strict)
        return (unset + needed + linter.warnings() + urlNotes + disposal).sortedByLocation(\.location)
    }
}

/// Warnings about a file that loads: each names a mistake seen in real pipelines, and none fires on a sensible
/// file (a warning that cannot be silenced by fixing the file would only teach users to ignore lint). It reads the
/// stages as the decoder recorded them (`StageEntry`: the stage and the options written), never the file's nodes.
struct PipelineLinter {
    /// The stages of the pipeline, each decoded (`configured` is set).
    let stages: [StageEntry]

    func warnings() -> [PipelineLintIssue] {
        var issues: [PipelineLintIssue] = []
        func warn(_ location: SourceLocation, _ message: String) {
            issues.append(PipelineLintIssue(severity: .warning, location: location, message: message))
        }
        let configured = stages.compactMap(\.configured)

        for entry in stages where entry.name == ValidateStage.name {
            let rules = entry.optionNames.filter { !["as", "sniff", "when"].contains($0) }
            if rules.isEmpty, let stage = entry.configured {
                warn(
                    stage.location,
                    "validate has no rules: it only checks that files are not empty and that their content matches "
                        + "their extension; add extensions, max_bytes, duration …")
            }
        }

        issues += sizeRulesBeforeFit().map {
            PipelineLintIssue(severity: .warning, location: $0.location, message: $0.message)
        }

        // `as` names given twice: later stages only see the last one.
        var named: [String: ConfiguredStage] = [:]
        for stage in configured {
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
        for entry in stages {
            // `verify:` is sent before the call it checks: the call's own answer is never there.
            if let own = entry.configured?.resultName, let verify = entry.optionNode("verify") {
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
        for entry in stages {
            let verifyURL = entry.optionNode("verify").flatMap { optionNode("url", in: $0) }
            for node in [entry.optionNode("url"), verifyURL].compactMap({ $0 }) {
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

    private func optionNode(_ name: String, in node: ConfigNode) -> ConfigNode? {
        guard case .mapping(let pairs) = node.kind else { return nil }
        return pairs.first { $0.key.scalar == name }?.value
    }

    /// The first path component of every `{{name.…}}` in the node's scalars, with the scalar's place (read by the
    /// one template parser).
    private func templateRoots(in node: ConfigNode) -> [(String, SourceLocation)] {
        TemplateCheck.variables(in: node, lines: []).map { (String($0.0.prefix { $0 != "." }), $0.1) }
    }
}
