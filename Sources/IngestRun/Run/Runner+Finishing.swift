import Foundation
import IngestCore

extension Runner {
    /// The last step of every file the runner reports, on its worker: `on_success` / `on_failure` (once the
    /// journal has the file's result), then the metrics (`--metrics-addr`) count the final report.
    func finished(_ report: ItemReport, entry: InputEntry) -> ItemReport {
        var report = report
        if let disposer {
            let session = self.session
            report = disposer.apply(
                to: report, entry: entry, commit: session.map { session in { try session.commit() } })
        }
        if let metrics {
            let uploads = stages.contains { $0.usesNetwork && $0.name == "upload" }
            // A passed file's network stages were committed as barriers: the journal can be written.
            let written = session != nil && report.status == .passed && stages.contains(where: \.usesNetwork)
            metrics.record(report, journalWritten: written, sentBytes: uploads ? entry.size : 0)
        }
        return report
    }
}
