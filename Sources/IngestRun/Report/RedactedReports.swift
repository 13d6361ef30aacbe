import Foundation
import IngestCore

/// Every report writer gets the report through here: the last pass of `Redaction`'s one rule set before a byte
/// reaches a terminal, a CI log or a file. Stages already redact what they put in messages and facts; this pass
/// also covers what a journal written by an older version kept, and any message a stage built from a server's
/// answer without redacting it.
final class RedactingReportWriter: ReportWriter {
    private let inner: ReportWriter
    init(_ inner: ReportWriter) { self.inner = inner }

    func write(_ report: ItemReport) throws { try inner.write(report.redacted) }
    func finish(_ summary: RunSummary) throws { try inner.finish(summary) }
}

extension ItemReport {
    /// The report with secrets replaced in its failures, skip reason and facts (`Redaction.json`).
    package var redacted: ItemReport {
        var copy = self
        copy.failures = failures.map(\.redacted)
        copy.skipReason = skipReason.map(Redaction.text)
        if case .object(let object) = Redaction.json(.object(facts)) { copy.facts = object }
        return copy
    }
}

extension RuleFailure {
    /// The failure with secrets replaced in its message, expected and actual values.
    package var redacted: RuleFailure {
        var copy = self
        copy.message = Redaction.text(message)
        copy.expected = expected.map(Redaction.text)
        copy.actual = actual.map(Redaction.text)
        return copy
    }
}
