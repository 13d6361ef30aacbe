import ArgumentParser
import Foundation
import IngestCore
import IngestJournal
import IngestRun
import IngestStages

/// Where `status` and `report` find the journal.
struct JournalLocation: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The journal file (default: .ingest/journal.sqlite), or a postgres:// URL.", valueName: "path|url"))
    var journal: String?

    @Option(
        name: .long,
        help: ArgumentHelp("The work folder the journal sits beside (as given to `ingest run`).", valueName: "dir"))
    var workDir: String = ".ingest/work"

    /// Opens the journal for reading only: a run may be writing it at the same time. One that cannot be opened is
    /// said on standard error, and the command exits with code 3.
    func open() throws -> any JournalStore {
        try exiting(.internalError, on: JournalError.self, saying: "ingest") {
            if let journal, PostgresJournal.isURL(journal) { return try PostgresJournal(url: journal, writer: false) }
            return try SQLiteJournal(
                path: journal ?? JournalOptions.defaultPath(workDirectory: workDir), writer: false, create: false)
        }
    }
}

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show what the journal knows: files per state, and each failed or interrupted file with its reason.",
        discussion:
            "Files a live run is working on are shown in progress, with the pid that holds them. Exit code 0 when "
            + "no file failed or was interrupted, 1 otherwise, 3 when the journal cannot be read.")

    @OptionGroup var location: JournalLocation

    func run() throws {
        let journal = try location.open()
        // A `running` file a live run (or a live lease) holds is in progress, not interrupted.
        let holders = try journal.liveHolders()
        let pipelines = try JournalPipelines(journal)
        // The counts come from the same pass as the lines: a live run moves files on between two reads, and counts
        // read apart once gave "-1 interrupted".
        let (problems, counts, inProgress) = try unfinishedFiles(journal, holders: holders, pipelines: pipelines)
        var out = "journal \(journal.path)"
        if pipelines.mixed {
            let names = pipelines.names.map(JournalPipelines.label).joined(separator: ", ")
            out += " (pipelines \(TerminalText.escaped(names)))"
        } else if let name = try journal.meta("pipeline") {
            out += " (pipeline \(name))"
        }
        out += "\n"
        let interrupted = (counts[.running] ?? 0) - inProgress
        var lines: [(Int, String)] = [
            (counts[.done] ?? 0, "done"), (counts[.failed] ?? 0, "failed"), (counts[.skipped] ?? 0, "skipped"),
            (interrupted, "interrupted (the next run resumes them)"),
        ]
        if inProgress > 0 { lines.append((inProgress, "in progress (a live run holds them)")) }
        for (count, label) in lines { out += String(format: "%8d  ", count) + label + "\n" }
        if pipelines.mixed { out += pipelines.lines.map { "  " + TerminalText.escaped($0) + "\n" }.joined() }
        if !problems.isEmpty { out += "\n" + problems }
        let resumable = try ResumableUploads.lines(journal)
        if !resumable.isEmpty { out += (problems.isEmpty ? "\n" : "") + resumable }
        FileHandle.standardOutput.write(Data(out.utf8))
        let unfinished = (counts[.failed] ?? 0) + interrupted
        throw unfinished > 0 ? ExitStatus.ruleFailures : ExitStatus.success
    }

    /// The lines of the failed, interrupted and in-progress files, the files per state, and how many are in
    /// progress (a live run or lease holds them).
    private func unfinishedFiles(
        _ journal: any JournalStore, holders: JournalHolders, pipelines: JournalPipelines
    ) throws -> (lines: String, counts: [JournalState: Int], inProgress: Int) {
        /// Each file's pipeline, when the journal holds files of several.
        func of(_ record: JournalRecord) -> String {
            pipelines.mixed ? "  [pipeline \(TerminalText.escaped(JournalPipelines.label(record.pipeline)))]" : ""
        }
        var inProgress = 0
        var problems = ""
        var counts: [JournalState: Int] = [:]
        try journal.forEachRecord { record in
            counts[record.state, default: 0] += 1
            switch record.state {
            case .failed:
                problems += "FAIL  \(TerminalText.escaped(record.path))\(of(record))\n"
                for failure in record.failures.map(\.redacted) {
                    problems +=
                        "      \(TerminalText.escaped("\(failure.stage).\(failure.rule): \(failure.message)"))\n"
                }
            case .running:
                if let holder = holders.holder(of: record) {
                    inProgress += 1
                    problems +=
                        "RUN   \(TerminalText.escaped(record.path))  in progress (held by \(holder))\(of(record))\n"
                } else {
                    problems +=
                        "STOP  \(TerminalText.escaped(record.path))  \(try interruption(record, journal: journal))"
                        + "\(of(record))\n"
                }
            case .done, .skipped: break
            }
        }
        return (problems, counts, inProgress)
    }
}

/// Why a `running` file is unfinished: the stage a killed run was in.
func interruption(_ record: JournalRecord, journal: any JournalStore) throws -> String {
    let started = try journal.stages(fileID: record.id).last { $0.status == .started }
    if started?.name == PollStage.name {
        return "its job was still running (interrupted while waiting in stage poll); the next run waits for it again"
    }
    return started.map { "interrupted in stage \($0.name); the next run repeats that stage" }
        ?? "interrupted; the next run redoes it"
}

struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Write a report of every file in the journal, as `ingest run` would.",
        discussion: "Interrupted files are reported as failed, naming the stage they stopped in.")

    @OptionGroup var location: JournalLocation

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The report's format (default: from the output file's extension, else table).", valueName: "format"))
    var format: ReportFormat?

    @Option(
        name: .long,
        help: ArgumentHelp("Write the report to this file (mode 0600) instead of standard output.", valueName: "file"))
    var output: String?

    func run() throws {
        let journal = try location.open()
        let chosen =
            format ?? output.flatMap(ReportFormat.guess(fromPath:)) ?? .table
        let destination = try output.map { try ReportOutput(path: $0) } ?? ReportOutput()
        // Files of several pipelines are each reported under their own (a JUnit suite per pipeline).
        let pipelines = try JournalPipelines(journal)
        let name =
            pipelines.mixed
            ? pipelines.names.map(JournalPipelines.label).joined(separator: ", ")
            : try journal.meta("pipeline") ?? "ingest"
        let writer = try chosen.makeWriter(output: destination, pipelineName: name)
        var summary = RunSummary()
        try journal.forEachRecord { record in
            var report = try ItemReport(journaled: record, interruption: interruption(record, journal: journal))
            if pipelines.mixed { report.pipeline = JournalPipelines.label(record.pipeline) }
            summary.add(report.status)
            try writer.write(report)
        }
        try writer.finish(summary)
        throw summary.failed > 0 ? ExitStatus.ruleFailures : ExitStatus.success
    }
}

extension ItemReport {
    /// A journal record as the report line `ingest run` wrote for it; an interrupted file counts as failed.
    init(journaled record: JournalRecord, interruption: @autoclosure () throws -> String) throws {
        let status: ItemStatus
        var failures = record.failures
        switch record.state {
        case .done: status = .passed
        case .failed: status = .failed
        case .skipped: status = .skipped
        case .running:
            status = .failed
            failures.append(RuleFailure(stage: "journal", rule: .interrupted, message: try interruption()))
        }
        self.init(
            path: record.path, relativePath: record.relativePath, status: status, failures: failures,
            skipReason: record.reason, facts: record.facts)
    }
}
