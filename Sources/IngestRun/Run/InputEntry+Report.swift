import Foundation
import IngestCore

extension ItemReport {
    /// The report of `entry`, under the path and relative path the walker gave it.
    init(
        _ entry: InputEntry, status: ItemStatus, failures: [RuleFailure] = [], skipReason: String? = nil,
        facts: JSONObject = JSONObject()
    ) {
        self.init(
            path: entry.path, relativePath: entry.relativePath, status: status, failures: failures,
            skipReason: skipReason, facts: facts)
    }
}
