import ArgumentParser
import Foundation
import IngestConfig
import IngestCore
import IngestMedia
import IngestRun
import Synchronization

struct ProbeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe",
        abstract: "Read container, duration, streams, location and image facts of files, in-process.",
        discussion: """
            With --json, one JSON object per file per line (JSON Lines) with ffprobe's field names and real \
            numbers: path, format.format_name, format.duration, format.size, format.bit_rate, \
            streams[].index/codec_type/codec_name/width/height/rotation/sample_rate/channels/duration, \
            location.latitude/longitude when present, orientation for images, format.missing_bytes for an \
            MP4/QuickTime file cut short. A file that cannot be probed gives {"path": …, "error": {"rule": …, \
            "message": …}} and exit code 1.
            """)

    @Flag(name: .long, help: "One JSON object per file per line.")
    var json = false

    @Option(
        name: .long, parsing: .unconditional,
        help: CLINumber.probeTimeoutHelp,
        transform: { try CLINumber.seconds($0, "--timeout", CLINumber.probeSeconds) })
    var timeout: Double = 10

    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp(
            "Files probed at once, 1 to 1024 (default: number of cores; --jobs is another name for it).",
            valueName: "n"),
        transform: { try CLINumber.whole($0, "--concurrency", CLINumber.workers) })
    var concurrency: Int?

    /// The name this option had before every command said `--concurrency`; kept so scripts keep working.
    @Option(
        name: .customLong("jobs"), parsing: .unconditional, help: .hidden,
        transform: { try CLINumber.whole($0, "--jobs", CLINumber.workers) })
    var jobsAlias: Int?

    var jobs: Int {
        concurrency ?? jobsAlias ?? min(ProcessInfo.processInfo.activeProcessorCount, Pipeline.maxConcurrency)
    }

    @Argument(help: "Files (folders are walked).")
    var files: [String]

    func validate() throws {
        if files.isEmpty { throw ValidationError("give at least one file") }
        if concurrency != nil && jobsAlias != nil {
            throw ValidationError("--jobs is another name for --concurrency: give one of them")
        }
    }

    func run() throws {
        let walker = InputWalker(paths: files, spec: InputSpec(), inGivenOrder: true)
        var anyFailed = false
        // Probed in batches so output keeps the input order while `jobs` files are open at once.
        var batch: [InputEntry] = []
        func flush() {
            let results = Mutex([(line: String, failed: Bool)](repeating: ("", false), count: batch.count))
            let entries = batch
            let timeout = self.timeout
            let json = self.json
            DispatchQueue.concurrentPerform(iterations: entries.count) { index in
                let result = ProbeCommand.describe(entries[index], timeout: timeout, json: json)
                results.withLock { $0[index] = result }
            }
            for (line, didFail) in results.withLock({ $0 }) {
                print(line)
                anyFailed = anyFailed || didFail
            }
            batch.removeAll(keepingCapacity: true)
        }
        for entry in walker {
            batch.append(entry)
            if batch.count >= jobs * 8 { flush() }
        }
        flush()
        throw anyFailed ? ExitStatus.ruleFailures : ExitStatus.success
    }

    /// One output line for one file, and whether it failed.
    static func describe(_ entry: InputEntry, timeout: Double, json: Bool) -> (String, Bool) {
        if let reason = entry.skipReason {
            guard json else { return ("\(entry.path): skipped: \(reason)", false) }
            return (JSONValue.object(["path": .string(entry.path), "skipped": .string(reason)]).serialized(), false)
        }
        let result: Result<ProbeResult, ProbeError>
        if let problem = entry.problem {
            result = .failure(ProbeError(rule: problem.rule, message: problem.message))
        } else {
            do {
                result = .success(try Prober.probe(path: entry.path, timeout: timeout))
            } catch let error as ProbeError {
                result = .failure(error)
            } catch {
                result = .failure(ProbeError(rule: .error, message: "\(error)"))
            }
        }
        switch result {
        case .success(let probe):
            guard json else {
                // A file cut short still probes (its index is intact); say so, as `validate` fails it.
                let cut = probe.truncation.map { "  (\($0.message))" } ?? ""
                return (TerminalText.escaped("\(entry.path): \(TableSummary.describe(probe))\(cut)"), false)
            }
            var object: JSONObject = ["path": .string(entry.path)]
            for (key, value) in probe.json.pairs { object[key] = value }
            return (JSONValue.object(object).serialized(), false)
        case .failure(let error):
            guard json else {
                return (TerminalText.escaped("\(entry.path): error: \(error.rule): \(error.message)"), true)
            }
            let object: JSONValue = [
                "path": .string(entry.path),
                "error": ["rule": .string(error.rule.rawValue), "message": .string(error.message)],
            ]
            return (object.serialized(), true)
        }
    }
}

/// The one-line description `ingest probe` prints without --json.
enum TableSummary {
    static func describe(_ probe: ProbeResult) -> String {
        ItemReport(path: "", relativePath: "", status: .passed, facts: ["probe": .object(probe.json)]).summaryText
    }
}
