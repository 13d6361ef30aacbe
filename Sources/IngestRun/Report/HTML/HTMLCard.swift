import Foundation
import IngestCore

/// One file's card on the contact sheet: its preview, name, outcome and the few words the table shows, each broken
/// rule with expected and actual, and the probe facts behind a `<details>` (rendered only when opened). The
/// `data-` attributes are what the page's filters read.
enum HTMLCard {
    /// `imageSource` is what a picture's `src` holds (the thumbnail spool's marker, replaced when the page is
    /// written); nil puts the JPEG inline.
    static func html(_ report: ItemReport, preview: SheetPreview, stages: [String], imageSource: String? = nil)
        -> String
    {
        let status = report.status.rawValue
        let rules = report.failures.map { "\($0.stage).\($0.rule.rawValue)" }
        var html =
            "<article class=\"card \(status)\" data-status=\"\(status)\" data-rules=\"\(htmlEscape(rules.joined(separator: " ")))\""
            + " data-stages=\"\(htmlEscape(stages.joined(separator: " ")))\" data-name=\"\(htmlEscape(report.relativePath.lowercased()))\">"
        html += figure(preview, imageSource: imageSource)
        html += "<div class=\"body\"><h3 title=\"\(htmlEscape(report.path))\">\(htmlEscape(report.relativePath))</h3>"
        var line = "<b class=\"badge \(status)\">\(status)</b> "
        let details = report.status == .skipped ? (report.skipReason ?? "") : report.summaryText
        line += htmlEscape(details)
        if let pipeline = report.pipeline { line += " <i>[pipeline \(htmlEscape(pipeline))]</i>" }
        html += "<p class=\"line\">\(line)</p>"
        html += outputsLine(report)
        if !report.failures.isEmpty {
            html += "<ul class=\"rules\">"
            for failure in report.failures {
                html += "<li><code>\(htmlEscape(failure.stage)).\(htmlEscape(failure.rule.rawValue))</code> "
                html += htmlEscape(failure.message)
                var pairs: [String] = []
                if let expected = failure.expected { pairs.append("expected <b>\(htmlEscape(expected))</b>") }
                if let actual = failure.actual { pairs.append("found <b>\(htmlEscape(actual))</b>") }
                if !pairs.isEmpty { html += "<span class=\"ev\">\(pairs.joined(separator: " · "))</span>" }
                html += "</li>"
            }
            html += "</ul>"
        }
        if !report.facts.isEmpty {
            // Inside a <template>: the browser parses it but builds no nodes until the reader opens the details.
            html +=
                "<details><summary>Probe facts</summary><template>"
                + "<pre>\(htmlEscape(JSONValue.object(report.facts).prettySerialized()))</pre></template></details>"
        }
        return html + "</div></article>\n"
    }

    /// The thumbnail (loaded lazily), the level strip (inline SVG), or the reason for neither.
    static func figure(_ preview: SheetPreview, imageSource: String? = nil) -> String {
        switch preview {
        case .picture(let jpeg, let width, let height, let duration):
            var html =
                "<figure><img loading=\"lazy\" decoding=\"async\" width=\"\(width)\" height=\"\(height)\" alt=\"\" "
                + "src=\"\(imageSource ?? "data:image/jpeg;base64," + Data(jpeg).base64EncodedString())\">"
            if let duration { html += "<span class=\"dur\">\(clock(duration))</span>" }
            return html + "</figure>"
        case .waveform(let peaks, let duration):
            var html = "<figure class=\"wave\">" + waveformSVG(peaks)
            if let duration { html += "<span class=\"dur\">\(clock(duration))</span>" }
            return html + "</figure>"
        case .none(let reason):
            return "<figure class=\"none\"><span>no preview: \(htmlEscape(reason))</span></figure>"
        }
    }

    /// Peaks as one SVG path of vertical bars mirrored about the middle, 2 units a bar, 100 high.
    static func waveformSVG(_ peaks: [Float]) -> String {
        var path = ""
        for (index, peak) in peaks.enumerated() {
            let half = max(0.5, Double(peak) * 48)
            path += "M\(index * 2) \(format(50 - half))v\(format(2 * half))"
        }
        return
            "<svg viewBox=\"0 0 \(max(1, peaks.count * 2)) 100\" preserveAspectRatio=\"none\" role=\"img\" "
            + "aria-label=\"audio levels\"><path d=\"\(path)\"/></svg>"
    }

    /// `0:07`, `12:30`, `1:02:03`.
    static func clock(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0, seconds < 1e9 else { return "?" }
        let whole = Int(seconds.rounded())
        let (hours, minutes, secs) = (whole / 3600, whole % 3600 / 60, whole % 60)
        return hours > 0
            ? String(format: "%d:%02d:%02d", hours, minutes, secs) : String(format: "%d:%02d", minutes, secs)
    }

    private static func format(_ value: Double) -> String { String(format: "%.1f", value) }
}
