import Foundation
import IngestCore
import NativeSystem

/// `--report-format html` (and `--report x.html`): one self-contained page a person opens to look at a batch — a
/// summary, a filter bar, then a card per file with its thumbnail, failures first. Each file's card (thumbnail
/// included, as a `data:` JPEG) is made when the file finishes and spooled to one of two temp files (failed, the
/// rest), so memory holds one card at a time; `finish` writes the summary, which only then is known, and copies
/// the spools after it.
final class HTMLReportWriter: ReportWriter {
    private let output: ReportOutput
    private let pipelineName: String
    private let failed: ReportSpool
    private let rest: ReportSpool
    private let thumbnails: ThumbnailSpool
    private var summary = HTMLSummary()
    private var failedCards = 0
    private var restCards = 0
    /// Makes a file's preview.
    var preview: (String) -> SheetPreview = ContactSheet.preview(path:)
    /// Thumbnails inlined at most (`ThumbnailSpool.inlineLimit`; tests lower it).
    var inlineLimit = ThumbnailSpool.inlineLimit

    init(output: ReportOutput, pipelineName: String) throws {
        self.output = output
        self.pipelineName = pipelineName
        failed = try ReportSpool(name: "html-failed")
        rest = try ReportSpool(name: "html-rest")
        thumbnails = try ThumbnailSpool()
    }

    func write(_ report: ItemReport) throws {
        let status = try? FileStatus(path: report.path, followLinks: true)
        let bytes = status.flatMap { $0.kind == .regular ? $0.size : nil }
        var stages: [String] = []
        for stage in summary.add(report, bytes: bytes) where !stages.contains(stage) { stages.append(stage) }
        let shown = report.poster?.preview ?? (status == nil ? .none("not found") : preview(report.path))
        var source: String?
        if case .picture(let jpeg, _, _, _) = shown { source = try thumbnails.add(jpeg) }
        let card = HTMLCard.html(report, preview: shown, stages: stages, imageSource: source)
        let isFailure = report.status == .failed
        let index = isFailure ? failedCards : restCards
        if isFailure { failedCards += 1 } else { restCards += 1 }
        try (isFailure ? failed : rest).append(Self.chunkBreak(before: index) + card)
    }

    /// Cards per chunk: the first chunk of each section is plain HTML, later ones wait as `<script type=text/html>`
    /// (raw text, which the browser scans without building a node) until the reader scrolls near them or filters.
    static let chunkSize = 100

    /// What goes before card `index` of a section: a chunk's opening (and the previous one's end) every
    /// `chunkSize` cards after the first chunk.
    static func chunkBreak(before index: Int) -> String {
        guard index >= chunkSize, index % chunkSize == 0 else { return "" }
        return (index > chunkSize ? "</script>" : "") + "<script type=\"text/html\" class=\"more\">"
    }

    /// The end of a section's last waiting chunk, if it has one.
    static func chunkEnd(cards: Int) -> String { cards > chunkSize ? "</script>" : "" }

    func finish(_ counts: RunSummary) throws {
        let placement = try placement()
        let title = "ingest: \(pipelineName) — \(counts.line)"
        try output.write(HTMLPage.head(title: title))
        try output.write(header(counts))
        try output.write(HTMLPage.filters(rules: summary.rules, stages: summary.stageOrder, total: counts.total))
        try output.write("\n")
        try output.write(
            "<section class=\"files\" id=\"failed\"><h2>Failed (\(counts.failed))</h2><div class=\"grid\">\n")
        try thumbnails.copy(failed, to: output, placement: placement)
        try output.write(Self.chunkEnd(cards: failedCards))
        try output.write(
            "</div></section>\n<section class=\"files\" id=\"rest\"><h2>Passed and skipped (\(counts.passed + counts.skipped))"
                + "</h2><div class=\"grid\">\n")
        try thumbnails.copy(rest, to: output, placement: placement)
        try output.write(Self.chunkEnd(cards: restCards))
        try output.write("</div></section>\n<script>\(HTMLPage.script)</script>\n</body></html>\n")
        try output.commit()
    }

    /// Inline for a small batch or a report that is not a regular file (standard output, a pipe); otherwise the
    /// folder beside the report, made now.
    private func placement() throws -> ThumbnailSpool.Placement {
        guard thumbnails.count > inlineLimit, let path = output.regularFilePath else { return .inline }
        let folder = ThumbnailSpool.folder(besideReport: path)
        do {
            try StillFile.makeDirectories(folder.path)
        } catch {
            throw ReportError("cannot make the report's thumbnail folder \(folder.path): \(error)")
        }
        return .folder(path: folder.path, relative: folder.name)
    }

    /// Counts by outcome, total duration and size, the two histograms and the run's timings.
    private func header(_ counts: RunSummary) -> String {
        var html = "<header><h1>\(htmlEscape(pipelineName))</h1><div class=\"counts\">"
        html += "<div><b>\(counts.total)</b> <span>files</span></div>"
        for (name, count) in [("failed", counts.failed), ("passed", counts.passed), ("skipped", counts.skipped)] {
            html += "<div class=\"\(name)\"><b>\(count)</b> <span>\(name)</span></div>"
        }
        html +=
            "<div><b>\(HTMLCard.clock(summary.totalDuration))</b> <span>of media in \(summary.filesWithDuration) files</span></div>"
        html += "<div><b>\(ByteSize.format(summary.totalBytes))</b> <span>in all</span></div>"
        html += "</div><div class=\"charts\">"
        html += HTMLSummary.histogram(summary.durationBins, labels: HTMLSummary.durationLabels, title: "Durations")
        html += HTMLSummary.histogram(summary.sizeBins, labels: HTMLSummary.sizeLabels, title: "Sizes")
        html += timings()
        return html + "</div></header>\n"
    }

    /// The run's timings: when the first file started, seconds across files, and each stage's total and longest.
    private func timings() -> String {
        guard !summary.stageOrder.isEmpty else {
            return
                "<p class=\"line\">No timings: the files' stages were not timed here (a report from the journal).</p>"
        }
        var html = "<table class=\"stages\"><caption>Timings"
        if let first = summary.firstStart { html += ": first file started \(htmlEscape(first))" }
        if let span = summary.span {
            html += ", last finished \(String(format: "%.2f", span.end - span.start)) s later"
        }
        html += "</caption><tr><th>stage</th><th>files</th><th>seconds</th><th>mean</th><th>longest</th></tr>"
        for name in summary.stageOrder {
            guard let stage = summary.stages[name] else { continue }
            let mean = stage.files > 0 ? stage.seconds / Double(stage.files) : 0
            html +=
                "<tr><td>\(htmlEscape(name))</td><td>\(stage.files)</td><td>\(String(format: "%.2f", stage.seconds))</td>"
                + "<td>\(String(format: "%.3f", mean))</td><td>\(String(format: "%.3f", stage.longest))</td></tr>"
        }
        html +=
            "<tr><td>all files</td><td>\(summary.counts.total)</td><td>\(String(format: "%.2f", summary.fileSeconds))</td>"
        return html + "<td></td><td></td></tr></table>"
    }
}

/// Text spooled to a temp file (mode 0600, removed on deinit) until the report can be written in order.
final class ReportSpool {
    private let file: SpoolFile
    private var path: String { file.path }

    init(name: String) throws {
        let path = NSTemporaryDirectory() + "/ingest-\(name)-\(CurrentProcess.id)-\(UUID().uuidString).spool"
        do {
            file = try SpoolFile(path: path)
        } catch {
            throw ReportError("cannot create a temp file for the report at \(path): \(error.reason)")
        }
    }

    func append(_ text: String) throws { try append(Data(text.utf8)) }

    func append(_ data: Data) throws {
        do {
            try file.append([UInt8](data))
        } catch {
            throw ReportError("cannot write the report's spool file \(path): \(error.reason)")
        }
    }

    /// Hands everything spooled to `body`, 256 KiB at a time.
    func forEachChunk(_ body: (Data) throws -> Void) throws {
        try file.forEachChunk { try body(Data($0)) }
    }

    /// `count` bytes from `offset`.
    func read(at offset: Int64, count: Int) throws -> Data {
        let data = Data(try file.read(at: offset, count: count))
        guard data.count == count else { throw ReportError("the report's spool file \(path) is short") }
        return data
    }
}
