import Foundation
import NativeSystem

/// `--report-format github`: the table, plus a GitHub Actions workflow command for each broken rule
/// (`::error file=…,title=…::stage.rule: message`), which the run page shows as an annotation on the file; and,
/// when `GITHUB_STEP_SUMMARY` names a file (as it does in every Actions step), a Markdown job summary appended to it.
final class GitHubReportWriter: ReportWriter {
    /// Failed files the job summary lists; the rest are counted, so the summary stays small on a large batch.
    static let summaryRows = 50

    private let output: ReportOutput
    private let table: TableReportWriter
    private let pipelineName: String
    private let environment: [String: String]
    private var rows: [String] = []
    private var unlisted = 0

    init(output: ReportOutput, pipelineName: String, environment: [String: String]) {
        self.output = output
        table = TableReportWriter(output: output, commit: false)
        self.pipelineName = pipelineName
        self.environment = environment
    }

    func write(_ report: ItemReport) throws {
        try table.write(report)
        guard report.status == .failed else { return }
        let file = Self.workspaceRelative(report.path, workspace: environment["GITHUB_WORKSPACE"])
        var lines = ""
        for failure in report.failures {
            let title = "\(report.pipeline ?? pipelineName): \(failure.stage).\(failure.rule)"
            lines +=
                "::error file=\(Self.escapedProperty(file)),title=\(Self.escapedProperty(title))::"
                + Self.escapedData("\(failure.stage).\(failure.rule): \(failure.message)") + "\n"
            if rows.count < Self.summaryRows {
                rows.append(
                    "| \(Self.markdownCell(file)) | \(Self.markdownCell(failure.stage + "." + failure.rule.rawValue)) | "
                        + "\(Self.markdownCell(failure.message)) |")
            } else {
                unlisted += 1
            }
        }
        try output.write(lines)
    }

    func finish(_ summary: RunSummary) throws {
        try table.finish(summary)
        try output.commit()
        guard let path = environment["GITHUB_STEP_SUMMARY"], !path.isEmpty else { return }
        try Self.append(markdown(summary), to: path)
    }

    /// The job summary: counts, then a row per broken rule (at most `summaryRows`).
    func markdown(_ summary: RunSummary) -> String {
        let mark = summary.failed > 0 ? "❌" : "✅"
        var text = "### \(mark) ingest: \(Self.markdownCell(pipelineName))\n\n\(summary.line)\n\n"
        if !rows.isEmpty {
            text += "| File | Rule | Message |\n| --- | --- | --- |\n" + rows.joined(separator: "\n") + "\n"
            if unlisted > 0 { text += "\n…and \(unlisted) more broken rule(s): see the job's log.\n" }
            text += "\n"
        }
        return text
    }

    /// Appends to the step summary file (GitHub creates it; other steps write to it too, so never replaced).
    static func append(_ text: String, to path: String) throws {
        do {
            try FileSystem.append(Array(text.utf8), to: path)
        } catch {
            throw ReportError("cannot write the job summary \(path): \(error.message)")
        }
    }

    /// A path GitHub can place on the repository: relative to `GITHUB_WORKSPACE` when under it.
    static func workspaceRelative(_ path: String, workspace: String?) -> String {
        var relative = path
        if let workspace, !workspace.isEmpty {
            let prefix = workspace.hasSuffix("/") ? workspace : workspace + "/"
            if relative.hasPrefix(prefix) { relative.removeFirst(prefix.count) }
        }
        while relative.hasPrefix("./") { relative.removeFirst(2) }
        return relative
    }

    /// A workflow command's message: `%`, CR and LF escaped, as the Actions toolkit does.
    static func escapedData(_ text: String) -> String {
        text.replacingOccurrences(of: "%", with: "%25").replacingOccurrences(of: "\r", with: "%0D")
            .replacingOccurrences(of: "\n", with: "%0A")
    }

    /// A workflow command's property value: as `escapedData`, and `:` and `,`, which end a property.
    static func escapedProperty(_ text: String) -> String {
        escapedData(text).replacingOccurrences(of: ":", with: "%3A").replacingOccurrences(of: ",", with: "%2C")
    }

    /// Text for one Markdown table cell: no line breaks, `|` escaped, no HTML.
    static func markdownCell(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "|": out += "\\|"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "&": out += "&amp;"
            case "`": out += "\\`"
            case _ where character.isNewline: out += " "
            default: out.append(character)
            }
        }
        return out
    }
}
