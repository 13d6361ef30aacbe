import Foundation

/// What the top of the HTML report says about the whole batch, gathered one file at a time in fixed-size
/// counters (a batch of a million files costs what ten do): files by outcome, total duration and size, histograms
/// of durations and sizes on fixed bins, seconds per stage, and the broken rules and stages the filters offer.
struct HTMLSummary {
    var counts = RunSummary()
    var totalDuration = 0.0
    var filesWithDuration = 0
    var totalBytes: Int64 = 0
    var durationBins = [Int](repeating: 0, count: durationEdges.count + 1)
    var sizeBins = [Int](repeating: 0, count: sizeEdges.count + 1)
    /// Per stage: files it ran on, total and longest seconds (stages are the pipeline's: a handful).
    var stages: [String: (files: Int, seconds: Double, longest: Double)] = [:]
    var stageOrder: [String] = []
    /// Broken rules (`stage.rule`) and how many files broke each (bounded by the rule names).
    var rules: [String: Int] = [:]
    var fileSeconds = 0.0
    var firstStart: String?
    /// Seconds since 1970 of the first file's start and the last file's end: the run's wall time.
    var span: (start: Double, end: Double)?

    /// Upper bounds of the duration bins, in seconds (the last bin is everything longer).
    static let durationEdges: [Double] = [1, 10, 30, 60, 300, 900, 3600]
    static let durationLabels = ["<1s", "1–10s", "10–30s", "30s–1m", "1–5m", "5–15m", "15m–1h", ">1h"]
    static let sizeEdges: [Int64] = [100 << 10, 1 << 20, 10 << 20, 100 << 20, 1 << 30]
    static let sizeLabels = ["<100K", "100K–1M", "1–10M", "10–100M", "100M–1G", ">1G"]

    /// Counts `report` in; returns the stages it ran (for the card's filter attributes).
    mutating func add(_ report: ItemReport, bytes: Int64?) -> [String] {
        counts.add(report.status)
        if let duration = report.facts["probe"]?["format"]?["duration"]?.doubleValue, duration.isFinite,
            duration >= 0
        {
            totalDuration += duration
            filesWithDuration += 1
            durationBins[Self.durationEdges.firstIndex { duration < $0 } ?? Self.durationEdges.count] += 1
        }
        if let bytes {
            totalBytes += bytes
            sizeBins[Self.sizeEdges.firstIndex { bytes < $0 } ?? Self.sizeEdges.count] += 1
        }
        for failure in report.failures { rules["\(failure.stage).\(failure.rule.rawValue)", default: 0] += 1 }
        fileSeconds += report.seconds
        var ran: [String] = []
        if case .object(let timings)? = report.timings {
            if let started = timings["started"]?.stringValue {
                if firstStart.map({ started < $0 }) ?? true { firstStart = started }
                if let start = Self.epochSeconds(started) {
                    let end = start + max(0, timings["seconds"]?.doubleValue ?? 0)
                    span = (min(span?.start ?? start, start), max(span?.end ?? end, end))
                }
            }
            if case .array(let list)? = timings["stages"] {
                for entry in list {
                    guard let name = entry["stage"]?.stringValue else { continue }
                    let seconds = entry["seconds"]?.doubleValue ?? 0
                    addStage(name, seconds: seconds)
                    ran.append(name)
                }
            }
        }
        for failure in report.failures where !ran.contains(failure.stage) { ran.append(failure.stage) }
        return ran
    }

    private mutating func addStage(_ name: String, seconds: Double) {
        if stages[name] == nil { stageOrder.append(name) }
        var stage = stages[name] ?? (0, 0, 0)
        stage.files += 1
        stage.seconds += seconds
        stage.longest = max(stage.longest, seconds)
        stages[name] = stage
    }

    /// `2026-11-26T13:26:48.774Z` (the timings' `started`) as seconds since 1970; nil for any other shape.
    static func epochSeconds(_ text: String) -> Double? {
        let parts = text.split(whereSeparator: { "-T:Z".contains($0) }).map(String.init)
        guard parts.count == 6, let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            let hour = Int(parts[3]), let minute = Int(parts[4]), let second = Double(parts[5]),
            (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        // Days from 1970-01-01 to the civil date (Howard Hinnant's days_from_civil).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146097 + dayOfEra - 719468
        return Double(days * 86400 + hour * 3600 + minute * 60) + second
    }

    /// An SVG bar chart of `bins`, labelled, the bar's count on hover.
    static func histogram(_ bins: [Int], labels: [String], title: String) -> String {
        let top = max(1, bins.max() ?? 1)
        let barWidth = 50
        var svg =
            "<figure class=\"hist\"><figcaption>\(htmlEscape(title))</figcaption>"
            + "<svg viewBox=\"0 0 \(bins.count * barWidth) 96\" role=\"img\" aria-label=\"\(htmlEscape(title))\">"
        for (index, count) in bins.enumerated() {
            let height = count == 0 ? 0 : max(2, Int(Double(count) / Double(top) * 64))
            let x = index * barWidth
            svg +=
                "<g><title>\(htmlEscape(labels[index])): \(count)</title>"
                + "<rect x=\"\(x + 4)\" y=\"\(72 - height)\" width=\"\(barWidth - 8)\" height=\"\(height)\"/>"
                + "<text x=\"\(x + barWidth / 2)\" y=\"\(max(10, 68 - height))\" class=\"n\">\(count)</text>"
                + "<text x=\"\(x + barWidth / 2)\" y=\"88\">\(htmlEscape(labels[index]))</text></g>"
        }
        return svg + "</svg></figure>"
    }
}
