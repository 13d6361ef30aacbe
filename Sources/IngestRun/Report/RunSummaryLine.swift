import Foundation
import IngestCore

/// The line a run ends with on standard error: how much it did and how fast, beside the report's counts.
package enum RunSummaryLine {
    /// `412 files, 3.1 GiB in 2m14s, 23.7 MiB/s; 3 failed, 2 skipped` (bytes are the files' sizes).
    package static func text(_ summary: RunSummary, bytes: Int64, seconds: Double) -> String {
        let files = "\(summary.total) file\(summary.total == 1 ? "" : "s")"
        let time = seconds < 60 ? String(format: "%.1fs", seconds) : ProgressDisplay.formatSeconds(seconds)
        var line = "\(files), \(ByteSize.format(bytes)) in \(time)"
        if seconds > 0 { line += ", \(ByteSize.format(Int64(Double(bytes) / seconds)))/s" }
        return line + "; \(summary.failed) failed, \(summary.skipped) skipped"
    }
}
