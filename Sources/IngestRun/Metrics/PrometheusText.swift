import IngestCore
import IngestMedia
import IngestTemplates
import IngestJournal
import IngestStages
import IngestConfig
import IngestNative
import Foundation

/// Prometheus' text exposition format (0.0.4): `# HELP` and `# TYPE` lines, then `name{label="value"} number`.
struct PrometheusText {
    private(set) var text = ""

    mutating func family(_ name: String, _ type: String, _ help: String) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
    }

    mutating func sample(_ name: String, _ labels: [String: String], _ value: Double) {
        text += name + PrometheusText.labels(labels) + " " + PrometheusText.number(value) + "\n"
    }

    /// One stage's series of `ingest_stage_duration_seconds`: cumulative buckets, `+Inf`, sum and count.
    mutating func histogram(_ stage: String, _ histogram: RunMetrics.Histogram, bounds: [Double]) {
        let name = "ingest_stage_duration_seconds"
        for (index, bound) in bounds.enumerated() {
            sample(
                name + "_bucket", ["stage": stage, "le": PrometheusText.number(bound)], Double(histogram.counts[index]))
        }
        sample(name + "_bucket", ["stage": stage, "le": "+Inf"], Double(histogram.count))
        sample(name + "_sum", ["stage": stage], histogram.sum)
        sample(name + "_count", ["stage": stage], Double(histogram.count))
    }

    /// `{a="1",b="2"}` in key order, values escaped (backslash, quote, newline); empty for no labels.
    static func labels(_ labels: [String: String]) -> String {
        guard !labels.isEmpty else { return "" }
        let pairs = labels.keys.sorted().map { key -> String in
            let value = labels[key]!.replacingOccurrences(of: "\\", with: "\\\\")
                .replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: "\\n")
            return "\(key)=\"\(value)\""
        }
        return "{" + pairs.joined(separator: ",") + "}"
    }

    /// Whole numbers without a fraction, others as Swift prints them.
    static func number(_ value: Double) -> String {
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}
