import Foundation
import IngestCore

/// `--report x.json`: one JSON document, `{"pipeline": …, "files": [ …one object per file, as in JSON Lines… ],
/// "summary": {"passed", "failed", "skipped", "total"}}`, for tools that read a whole file with one parse (`jq .`,
/// `JSON.parse`). Files are streamed into the array as they finish, and the summary, known only at the end, comes
/// last; the file appears complete or not at all (`ReportOutput`).
final class JSONDocumentReportWriter: ReportWriter {
    private let output: ReportOutput
    private let pipelineName: String
    private var count = 0

    init(output: ReportOutput, pipelineName: String) {
        self.output = output
        self.pipelineName = pipelineName
    }

    func write(_ report: ItemReport) throws {
        var text = count == 0 ? Self.head(pipelineName) : ",\n"
        text += "  " + report.json.serialized()
        count += 1
        try output.write(text)
    }

    func finish(_ summary: RunSummary) throws {
        let counts: JSONValue = .object([
            "passed": .int(Int64(summary.passed)), "failed": .int(Int64(summary.failed)),
            "skipped": .int(Int64(summary.skipped)), "total": .int(Int64(summary.total)),
        ])
        try output.write((count == 0 ? Self.head(pipelineName) : "\n") + "],\n\"summary\": \(counts.serialized())}\n")
        try output.commit()
    }

    private static func head(_ pipelineName: String) -> String {
        "{\"pipeline\": \(JSONValue.string(pipelineName).serialized()),\n\"files\": [\n"
    }
}
