import Foundation
import IngestCore

extension ItemReport {
    /// The report of `entry`, under the path and relative path the walker gave it.
    init(
        _ entry: InputEntry, status: ItemStatus, failures: [RuleFailure] = [], skipReason: String? = nil,
        facts: JSONObject = JSONObject()
    ) {
        self.init(entry.file, status: status, failures: failures, skipReason: skipReason, facts: facts)
    }

    /// The report of a listed file, under the path and relative path it was listed with.
    init(
        _ file: ListedFile, status: ItemStatus, failures: [RuleFailure] = [], skipReason: String? = nil,
        facts: JSONObject = JSONObject()
    ) {
        self.init(
            path: file.path, relativePath: file.relativePath, status: status, failures: failures,
            skipReason: skipReason, facts: facts)
    }
}
