import Foundation
import IngestConfig
import IngestCore
import NativeSystem

/// Applies `on_success` / `on_failure` to a file whose report is final, on the worker that finished it. A passed file
/// is moved or deleted only once an `upload` stage delivered it and the journal has committed it as done (rclone
/// `move`: the source goes only after a verified upload), and only while it is still the very file the run listed; a
/// failed file is moved aside with its report beside it. A file left without a verdict (interrupted, changed under the run, the journal or its lease
/// failing) stays where it is, for the next run.
///
/// Used by `Runner` for every file it reports under `ingest run` and `ingest watch`; a rehearsal (`--dry-run`,
/// `ingest test`) only says what it would do, and `ingest validate` has none (it changes nothing).
package struct Disposer: Sendable {
    let disposal: Disposal
    /// True for `--dry-run`: the report says what would be done; nothing is touched.
    let dryRun: Bool
    /// Tests force the copy-then-unlink path a move across file systems takes.
    var forceCopy = false

    package init(disposal: Disposal, dryRun: Bool) {
        self.disposal = disposal
        self.dryRun = dryRun
    }

    /// The file's report after its disposal: unchanged when nothing applies; with a `disposal` fact saying where it
    /// went; or failed, saying why it could not be moved (the journal keeps its verdict). `commit` makes the journal's
    /// record of the file durable (nil without a journal).
    func apply(to report: ItemReport, entry: InputEntry, commit: (() throws -> Void)?) -> ItemReport {
        switch report.status {
        case .passed:
            guard let success = disposal.onSuccess else { return report }
            guard report.delivered else { return kept(report) }
            return settle(report, entry: entry, success: success, commit: commit)
        case .skipped:
            // Done in an earlier run whose move failed or never happened (a crash, a name taken): it goes now.
            guard let success = disposal.onSuccess, report.skipReason == JournalReason.alreadyDone else {
                return report
            }
            guard report.delivered else { return kept(report) }
            return settle(report, entry: entry, success: success, commit: nil)
        case .failed:
            guard let folder = disposal.onFailureMoveTo, Disposer.hasVerdict(report) else { return report }
            return moveAside(report, entry: entry, folder: folder, commit: commit)
        }
    }

    /// A failure that says nothing of the file itself leaves it for the next run.
    static func hasVerdict(_ report: ItemReport) -> Bool {
        !report.failures.contains {
            [.interrupted, .changed, .lease, .journal].contains($0.rule) || $0.stage == "journal"
        }
    }

    private func settle(
        _ report: ItemReport, entry: InputEntry, success: Disposal.Success, commit: (() throws -> Void)?
    ) -> ItemReport {
        let stage = "on_success"
        switch success {
        case .moveTo(let folder):
            let target = Disposer.target(of: entry, under: folder)
            if dryRun { return noted(report, ["action": "would move", "to": .string(target)]) }
            if let failed = checkBefore(report, entry: entry, stage: stage, rule: .move, commit: commit) {
                return failed
            }
            return move(report, entry: entry, to: target, stage: stage)
        case .delete:
            if dryRun { return noted(report, ["action": "would delete"]) }
            if let failed = checkBefore(report, entry: entry, stage: stage, rule: .delete, commit: commit) {
                return failed
            }
            do {
                try FileSystem.remove(entry.path)
            } catch {
                return failing(report, stage: stage, rule: .delete, "not deleted: \(error)")
            }
            return noted(report, ["action": "deleted"])
        }
    }

    /// The journal's commit of the file as done, and the file still the one listed: nil when it may go.
    private func checkBefore(
        _ report: ItemReport, entry: InputEntry, stage: String, rule: RuleName, commit: (() throws -> Void)?
    ) -> ItemReport? {
        let verb = rule == .delete ? "deleted" : "moved"
        do {
            try commit?()
        } catch {
            // Rule `journal`: the health check (`/healthz`) turns 503 on it.
            return failing(
                report, stage: stage, rule: .journal, "not \(verb): the journal could not commit it as done: \(error)")
        }
        guard let listed = entry.status else { return nil }
        do {
            let now = try FileStatus(path: entry.path, followLinks: true)
            if let change = now.change(since: listed) {
                return failing(
                    report, stage: stage, rule: rule, "not \(verb): the file changed since it was taken (\(change))")
            }
        } catch {
            return failing(report, stage: stage, rule: rule, "not \(verb): \(error)")
        }
        return nil
    }

    private func move(_ report: ItemReport, entry: InputEntry, to target: String, stage: String) -> ItemReport {
        do {
            let method = try FileMove.move(from: entry.path, to: target, expected: entry.status, forceCopy: forceCopy)
            return noted(report, ["action": "moved", "to": .string(target), "method": .string(method.rawValue)])
        } catch {
            var message = "not moved to \(target): \(error); the file stays at \(entry.path)"
            if case .exists = error {
                message =
                    "not moved: \(target) already exists and is not replaced; the file stays at \(entry.path)"
                    + (report.status == .failed ? "" : " (the journal keeps it as done)")
            }
            return failing(report, stage: stage, rule: .move, message)
        }
    }

    /// `on_failure`: the file moved under `folder`, its report written beside it as `NAME.report.json`.
    private func moveAside(
        _ report: ItemReport, entry: InputEntry, folder: String, commit: (() throws -> Void)?
    ) -> ItemReport {
        let target = Disposer.target(of: entry, under: folder)
        if dryRun { return noted(report, ["action": "would move", "to": .string(target)]) }
        // The journal's record of the failure goes first: the file is found under its new name by nobody.
        try? commit?()
        let moved = move(report, entry: entry, to: target, stage: "on_failure")
        guard moved.failures.count == report.failures.count else { return moved }
        do {
            try StillFile.writeAtomically(
                [Array(moved.json.prettySerialized().utf8) + [10]], to: target + ".report.json")
        } catch {
            return failing(
                moved, stage: "on_failure", rule: .move, "moved to \(target), but its report was not written: \(error)")
        }
        return moved
    }

    /// `folder/relative/path` of the entry.
    static func target(of entry: InputEntry, under folder: String) -> String {
        let base = folder.count > 1 && folder.hasSuffix("/") ? String(folder.dropLast()) : folder
        return base + "/" + entry.relativePath
    }

    /// A file that passed without being delivered (its every upload left out by `when:`): it stays, and its report
    /// says why, so the operator who finds it still in the inbox knows.
    private func kept(_ report: ItemReport) -> ItemReport {
        noted(
            report,
            [
                "action": .string(dryRun ? "would keep" : "kept"),
                "reason": .string(dryRun ? "no upload would deliver it" : "no upload delivered it"),
            ])
    }

    private func noted(_ report: ItemReport, _ fact: JSONObject) -> ItemReport {
        var report = report
        report.facts["disposal"] = .object(fact)
        return report
    }

    private func failing(_ report: ItemReport, stage: String, rule: RuleName, _ message: String) -> ItemReport {
        var report = report
        report.status = .failed
        report.failures.append(RuleFailure(stage: stage, rule: rule, message: message))
        return report
    }
}
