import Foundation
import IngestCore
import IngestRun

/// `ingest run --dry-run`: what it needs besides the run itself.
enum DryRun {
    /// The process environment, with every variable the pipeline file reads without a default (`${VAR}`,
    /// `${VAR:?message}`) and that is unset given as `<unset VAR>`: a dry run sends nothing, so it needs no
    /// secrets, and shows where each one would go. Variables with a default (`${VAR:-x}`) keep it.
    static func environment(pipelineAt path: String) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
            let pattern = try? NSRegularExpression(pattern: #"\$\{([A-Za-z_][A-Za-z0-9_]*)(:?\?[^}]*)?\}"#)
        else { return environment }
        for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
            guard let range = Range(match.range(at: 1), in: text) else { continue }
            let name = String(text[range])
            if environment[name]?.isEmpty ?? true { environment[name] = "<unset \(name)>" }
        }
        return environment
    }

    /// One file's rehearsed requests, under its line of the table.
    static func print(_ requests: [RehearsedRequest], toStandardError: Bool = false) {
        guard !requests.isEmpty else { return }
        let text = requests.flatMap { $0.lines.map { "    " + $0 } }.joined(separator: "\n") + "\n"
        (toStandardError ? FileHandle.standardError : FileHandle.standardOutput).write(Data(text.utf8))
    }

    /// What `on_success` / `on_failure` would do with the file (`would move to DIR/a/b.mov`, `would delete`).
    static func printDisposal(of report: ItemReport, toStandardError: Bool) {
        guard case .object(let disposal)? = report.facts["disposal"], case .string(let action)? = disposal["action"]
        else { return }
        var line = "    " + (report.status == .failed ? "on_failure: " : "on_success: ") + action
        if case .string(let target)? = disposal["to"] { line += " to " + target }
        if case .string(let reason)? = disposal["reason"] { line += " (" + reason + ")" }
        (toStandardError ? FileHandle.standardError : FileHandle.standardOutput).write(Data((line + "\n").utf8))
    }
}
