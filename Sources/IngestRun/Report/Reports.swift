import Foundation
import IngestCore
import NativeSystem

/// The report formats of `--report-format`.
package enum ReportFormat: String, CaseIterable, Sendable {
    /// Aligned text for people: a line per file, the broken rules under it, the counts last.
    case table
    /// One JSON object per input file per line.
    case jsonl
    /// One JSON document: the files' objects in an array, and the counts (`JSONDocumentReportWriter`).
    case json
    /// JUnit XML: a testcase per file, a failure element per broken rule, which CI systems show natively.
    case junit
    /// The table with GitHub Actions annotations, and a job summary in `$GITHUB_STEP_SUMMARY` (`GitHubReportWriter`).
    case github
    /// One self-contained HTML page: a summary, filters, and a contact sheet of every file, failures first
    /// (`HTMLReportWriter`).
    case html

    /// The format a report file's name suggests (`.jsonl`, `.json`, `.xml`, `.html`); nil when it suggests none.
    package static func guess(fromPath path: String) -> ReportFormat? {
        switch (path as NSString).pathExtension.lowercased() {
        case "jsonl", "ndjson": return .jsonl
        case "json": return .json
        case "xml": return .junit
        case "html", "htm": return .html
        case "txt", "log": return .table
        default: return nil
        }
    }
}

/// Receives each file's report in order, then the totals. Writers stream: nothing holds the whole batch.
package protocol ReportWriter: AnyObject {
    func write(_ report: ItemReport) throws
    func finish(_ summary: RunSummary) throws
}

/// Where a report goes: standard output (also for the path `-`), or a path opened as `OutputFile` says: a regular
/// file written atomically (a temp file, mode 0600, renamed over the target — a symlink's target, in its own
/// folder — when the report is complete, so a crash never leaves half a report behind), or a FIFO, device or
/// `/dev/fd/N` written directly.
package final class ReportOutput {
    /// True when the report goes to this process's standard output.
    private let toStandardOutput: Bool
    private let file: OutputFile?
    private let finalPath: String?
    private var buffer = Data()

    /// Standard output.
    package init() {
        toStandardOutput = true
        file = nil
        finalPath = nil
    }

    /// The file at `path` (standard output for `-`), made complete only by `commit()`; or, `appending`, appended
    /// to in place as each line comes.
    package init(path: String, appending: Bool = false) throws {
        guard path != "-" else {
            (toStandardOutput, file, finalPath) = (true, nil, nil)
            return
        }
        do {
            file = try OutputFile(path: path, appending: appending)
        } catch {
            throw ReportError("cannot write the report \(path): \(error.reason)")
        }
        toStandardOutput = false
        finalPath = path
    }

    /// The path of the report when it is a regular file (written through a temp file); nil for standard output,
    /// a FIFO or a device. The HTML report puts its thumbnails in a folder beside it.
    var regularFilePath: String? { file?.isDirect == false ? finalPath : nil }

    /// True when the report goes to standard output itself (no path, `-`, `/dev/stdout`, `/dev/fd/1`).
    package var isStandardOutput: Bool {
        finalPath == nil || file?.duplicated == CurrentProcess.standardOutputDescriptor
    }

    package var isTerminal: Bool { finalPath == nil && CurrentProcess.standardOutputIsTerminal }

    package func write(_ text: String) throws { try write(Data(text.utf8)) }

    package func write(_ bytes: Data) throws {
        buffer.append(bytes)
        if buffer.count >= 64 * 1024 || file?.isDirect ?? true { try flush() }
    }

    private func flush() throws {
        guard !buffer.isEmpty else { return }
        if let file {
            var failure: SystemError?
            buffer.withUnsafeBytes { bytes in
                do { try file.write(bytes) } catch let error as SystemError { failure = error } catch {}
            }
            if let failure { throw ReportError("cannot write the report \(file.path): \(failure.reason)") }
            buffer.removeAll(keepingCapacity: true)
            return
        }
        do {
            if toStandardOutput { try CurrentProcess.writeToStandardOutput([UInt8](buffer)) }
        } catch {
            throw ReportError("cannot write the report \(finalPath ?? "to standard output"): \(error.reason)")
        }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Flushes, and for a regular file: fsync, then rename into place.
    package func commit() throws {
        try flush()
        guard let file, let finalPath else { return }
        do {
            try file.commit()
        } catch {
            throw ReportError("cannot write the report \(finalPath): \(error.reason)")
        }
    }
}

/// A report that could not be written (exit code 3).
package struct ReportError: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}

extension ReportFormat {
    /// A writer of this format onto `output`; `pipelineName` names the JUnit suite and the table's heading.
    package func makeWriter(output: ReportOutput, pipelineName: String) throws -> ReportWriter {
        let writer: ReportWriter
        switch self {
        case .table: writer = TableReportWriter(output: output)
        case .jsonl: writer = JSONLinesReportWriter(output: output)
        case .json: writer = JSONDocumentReportWriter(output: output, pipelineName: pipelineName)
        case .github:
            writer = GitHubReportWriter(
                output: output, pipelineName: pipelineName, environment: ProcessInfo.processInfo.environment)
        case .junit: writer = try JUnitReportWriter(output: output, suiteName: pipelineName)
        case .html: writer = try HTMLReportWriter(output: output, pipelineName: pipelineName)
        }
        return RedactingReportWriter(writer)
    }
}

/// `STATUS  path  details`, with each broken rule on its own line beneath.
final class TableReportWriter: ReportWriter {
    private let output: ReportOutput
    /// False when another writer shares the output and completes it (the GitHub format adds lines of its own).
    private let commits: Bool

    init(output: ReportOutput, commit: Bool = true) {
        self.output = output
        commits = commit
    }

    package func write(_ report: ItemReport) throws {
        let label: String
        switch report.status {
        case .passed: label = "ok  "
        case .failed: label = "FAIL"
        case .skipped: label = "skip"
        }
        // Names and messages come from outside: escaped, so each file stays on its own line(s).
        var line = "\(label)  \(TerminalText.escaped(report.path))"
        let details =
            report.status == .skipped ? (report.skipReason ?? "") : TableReportWriter.summary(of: report.facts)
        if !details.isEmpty { line += "  " + TerminalText.escaped(details) }
        if let pipeline = report.pipeline { line += "  [pipeline \(TerminalText.escaped(pipeline))]" }
        line += "\n"
        for failure in report.failures {
            var text = "\(failure.stage).\(failure.rule): \(failure.message)"
            if let expected = failure.expected {
                if let actual = failure.actual, !failure.message.contains(actual) {
                    text += " (expected \(expected), found \(actual))"
                } else if !failure.message.contains(expected) {
                    text += " (expected \(expected))"
                }
            }
            line += "      " + TerminalText.escaped(text) + "\n"
        }
        try output.write(line)
    }

    func finish(_ summary: RunSummary) throws {
        try output.write(summary.line + "\n")
        if commits { try output.commit() }
    }

    /// A few words on what the probe found: `mov 2.00s 320×240 h264+aac geohash u6sce0`.
    static func summary(of facts: JSONObject) -> String {
        var words: [String] = []
        if case .object(let probe)? = facts["probe"] {
            if let format = probe["format"]?["format_name"]?.stringValue {
                words.append(String(format.split(separator: ",").first ?? ""))
            }
            if let duration = probe["format"]?["duration"]?.doubleValue {
                words.append(String(format: "%.2fs", duration))
            }
            var size: String?
            var rotated: String?
            var codecs: [String] = []
            if case .array(let streams)? = probe["streams"] {
                for stream in streams {
                    if size == nil, let width = stream["width"]?.stringValue, let height = stream["height"]?.stringValue
                    {
                        size = "\(width)×\(height)"
                    }
                    if let rotation = stream["rotation"]?.doubleValue, rotation != 0 {
                        rotated = "rotation \(JSONValue.format(rotation))"
                    }
                    if let codec = stream["codec_name"]?.stringValue, stream["codec_type"]?.stringValue != "data" {
                        codecs.append(codec)
                    }
                }
            }
            if size == nil, let width = probe["width"]?.stringValue, let height = probe["height"]?.stringValue {
                size = "\(width)×\(height)"
            }
            if let size { words.append(size) }
            if !codecs.isEmpty { words.append(codecs.joined(separator: "+")) }
            if let rotated { words.append(rotated) }
            if let orientation = probe["orientation"]?.stringValue, orientation != "1" {
                words.append("orientation \(orientation)")
            }
        }
        if let geohash = facts["geohash"]?.stringValue { words.append("geohash \(geohash)") }
        // Fields a request stage was asked to `report:` (a backend's analysis), as `name=value`.
        if case .object(let fields)? = facts["report"] {
            for (label, value) in fields.pairs {
                let text: String
                switch value {
                case .string(let string) where !string.isEmpty && !string.contains(where: \.isWhitespace):
                    text = string
                case .int, .double, .bool: text = value.stringValue ?? value.serialized()
                default: text = value.serialized()
                }
                words.append("\(label)=\(text)")
            }
        }
        // Notes a stage left on a file that passed (`already done: the server answered 409 Conflict: …`).
        if case .array(let notes)? = facts["notes"] {
            words += notes.compactMap(\.stringValue).map { "(\($0))" }
        }
        return words.joined(separator: " ")
    }
}

/// One JSON object per file per line, keys in a fixed order.
final class JSONLinesReportWriter: ReportWriter {
    private let output: ReportOutput
    init(output: ReportOutput) { self.output = output }

    package func write(_ report: ItemReport) throws { try output.write(report.json.serialized() + "\n") }
    func finish(_ summary: RunSummary) throws { try output.commit() }
}

/// JUnit XML. The suite's counts come first in the file but are known only at the end, so test cases are spooled
/// to a temp file and copied after the header: memory stays bounded for any batch size. A report that names each
/// file's pipeline (`ingest report` on a shared journal) gets a suite per pipeline.
final class JUnitReportWriter: ReportWriter {
    private let output: ReportOutput
    private let suiteName: String
    /// The suites in the order their first file came; the first is `suiteName`'s.
    private var suites: [JUnitSuiteSpool]

    init(output: ReportOutput, suiteName: String) throws {
        self.output = output
        self.suiteName = suiteName
        suites = [try JUnitSuiteSpool(name: suiteName)]
    }

    private func suite(for report: ItemReport) throws -> JUnitSuiteSpool {
        let name = report.pipeline ?? suiteName
        if let suite = suites.first(where: { $0.name == name }) { return suite }
        suites.append(try JUnitSuiteSpool(name: name))
        return suites[suites.count - 1]
    }

    package func write(_ report: ItemReport) throws {
        let suite = try suite(for: report)
        var xml =
            "    <testcase classname=\"\(xmlEscape(suite.name))\" name=\"\(xmlEscape(report.path))\" "
            + "file=\"\(xmlEscape(report.path))\" time=\"\(String(format: "%.3f", report.seconds))\""
        switch report.status {
        case .passed:
            xml += "/>\n"
        case .skipped:
            xml += ">\n      <skipped message=\"\(xmlEscape(report.skipReason ?? "skipped"))\"/>\n    </testcase>\n"
        case .failed:
            xml += ">\n"
            for failure in report.failures {
                var body = failure.message
                if let expected = failure.expected { body += "\nexpected: \(expected)" }
                if let actual = failure.actual { body += "\nactual: \(actual)" }
                xml +=
                    "      <failure type=\"\(xmlEscape(failure.stage + "." + failure.rule.rawValue))\" "
                    + "message=\"\(xmlEscape(failure.message))\">\(xmlEscape(body))</failure>\n"
            }
            xml += "    </testcase>\n"
        }
        try suite.append(xml, status: report.status)
    }

    func finish(_ summary: RunSummary) throws {
        try output.write("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
        try output.write(
            "<testsuites name=\"ingest\" tests=\"\(summary.total)\" failures=\"\(summary.failed)\" "
                + "skipped=\"\(summary.skipped)\">\n")
        // The default suite is left out when it is empty and others are not (every file named its pipeline).
        for suite in suites where suite.summary.total > 0 || suite === suites[0] && suites.count == 1 {
            try suite.write(to: output)
        }
        try output.write("</testsuites>\n")
        try output.commit()
    }
}

extension ItemReport {
    /// A few words on what the stages found (`mov 2.00s 320×240 h264+aac geohash u6sce0`), as the table shows it.
    package var summaryText: String { TableReportWriter.summary(of: facts) }
}
