import Foundation

/// The objects of a JSON Lines report written with `--report FILE`, in file order. A missing file gives none and a
/// line that is not a JSON object is left out: the test's own expectations then say what is missing.
func reportObjects(_ path: String) -> [[String: Any]] {
    let lines = (try? String(contentsOfFile: path, encoding: .utf8))?.split(separator: "\n") ?? []
    return lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
}

/// Runs `ingest COMMAND PIPELINE INPUTS... --report FILE -q` in `folder`, with a report file no earlier run there
/// used (tests that run twice compare the two), and returns the result with the report's objects.
func runIngestWithReport(
    _ pipeline: String, _ inputs: [String], in folder: String, environment: [String: String],
    command: String = "run"
) throws -> (CommandResult, [[String: Any]]) {
    let report = folder + "/report-\(UUID().uuidString.prefix(6)).jsonl"
    let result = try runCommand(
        TestPaths.ingest, [command, pipeline] + inputs + ["--report", report, "-q"], environment: environment,
        directory: folder)
    return (result, reportObjects(report))
}
