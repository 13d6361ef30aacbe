import ArgumentParser
import Foundation
import IngestConfig
import IngestCore
import IngestJournal
import IngestRun
import Logging

/// Options shared by `run` and `validate`.
struct RunOptions: ParsableArguments {
    @Argument(help: "The pipeline file (YAML).")
    var pipeline: String

    @Argument(
        help: ArgumentHelp(
            "Files or folders to work on (default: the current folder).",
            discussion: "The work folder and the journal are never inputs; a path that does not exist is a usage "
                + "error."))
    var paths: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Also write the report to this file (-: standard output, instead of the table).", valueName: "file"))
    var report: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Format of the report (default: from the report file's extension — .jsonl, .json, .xml, .html — else table).",
            valueName: "format"))
    var reportFormat: ReportFormat?

    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp(
            "Files worked on at once, 1 to 1024 (overrides the pipeline's concurrency).", valueName: "n"),
        transform: { try CLINumber.whole($0, "--concurrency", CLINumber.workers) })
    var concurrency: Int?

    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp(
            "Cap on the bytes per second all uploads send together, in rclone's units: 8M (8 MiB/s), 512k, off, or "
                + "a timetable \"08:00,512k 19:00,off\" (overrides the pipeline's bwlimit).", valueName: "rate"),
        transform: { text in
            do { return try BandwidthLimit(parsing: text) } catch { throw ValidationError("--bwlimit: \(error)") }
        })
    var bwlimit: BandwidthLimit?

    @Option(name: .long, help: ArgumentHelp("Folder for temp and transcoded files.", valueName: "dir"))
    var workDir: String = ".ingest/work"

    @Option(
        name: .long, parsing: .unconditional,
        help: CLINumber.probeTimeoutHelp,
        transform: { try CLINumber.seconds($0, "--probe-timeout", CLINumber.probeSeconds) })
    var probeTimeout: Double = 10

    @Flag(name: [.short, .long], help: "Print nothing on standard output but the report it was asked for.")
    var quiet = false

    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp(
            "Take only shard I of N (0 ≤ I < N): the files whose relative path hashes (FNV-1a) to I modulo N.",
            discussion: "The N shards of a tree partition it exactly, on every machine: one per CI matrix job or "
                + "Kubernetes Indexed Job (--shard $JOB_COMPLETION_INDEX/N).",
            valueName: "I/N"))
    var shard: String?

    @OptionGroup(title: "Logging") var log: LogOptions

    func validate() throws {
        if let shard {
            do {
                _ = try Shard(parsing: shard)
            } catch {
                throw ValidationError("\(error)")
            }
        }
    }

    /// Loads the pipeline, runs it and writes the reports; returns the exit status. `journal` is given for
    /// `ingest run` (nil for `ingest validate`, which changes nothing and so has nothing to resume).
    /// `watch` is given for `ingest watch`: the run goes on over files as they land, until a signal.
    func execute(
        offline: Bool, journal journalOptions: JournalOptions? = nil, dryRun: Bool = false,
        service: ServiceOptions? = nil, watch: WatchOptions? = nil
    ) throws -> ExitStatus {
        // A dry run sends nothing, so it needs no secrets: an unset `${VAR}` renders as `<unset VAR>`.
        let environment = dryRun ? DryRun.environment(pipelineAt: self.pipeline) : ProcessInfo.processInfo.environment
        guard var pipeline = try loadPipeline(environment: environment, offline: offline, dryRun: dryRun) else {
            return .usage
        }
        if let concurrency { pipeline.concurrency = concurrency }
        if let bwlimit { pipeline.bandwidth = bwlimit }
        // A path that is not there is a mistake on the command line, not a file that failed.
        let missing = InputPaths.missing(paths)
        for problem in missing { printError("ingest: \(problem) (nothing ran)") }
        if !missing.isEmpty { return .usage }
        do {
            try pipeline.disposal.check(inputs: paths.isEmpty ? ["."] : paths)
        } catch {
            printError("ingest: \(self.pipeline): \(error) (nothing ran)")
            return .usage
        }
        var settings = RunSettings(
            workDirectory: workDir, probeTimeout: probeTimeout, offline: offline, environment: environment)
        if dryRun { settings.rehearsal = Rehearsal() }
        let progress = quiet ? nil : RunProgress()
        let display = progress.map { ProgressDisplay(progress: $0) }
        settings.logger = log.makeLogger(display: display)
        let server = try service?.start()
        defer { server?.stop() }
        var journal: (any JournalStore)?
        if let journalOptions, !journalOptions.noJournal, !dryRun {
            do {
                journal = try journalOptions.open(workDirectory: workDir)
            } catch let error as JournalError {
                printError("ingest: \(error)")
                return .internalError
            }
        }
        let runner = Runner(
            pipeline: pipeline, settings: settings, progress: progress, journal: journal,
            resume: journalOptions?.policy ?? .resume, shard: try shard.map(Shard.init(parsing:)),
            metrics: server?.metrics)
        // JSON Lines on a pipe stay JSON: no plain progress lines between them (a terminal still gets the display).
        if log.format != .json || display?.isInteractive == true { display?.start() }
        defer { display?.stop() }
        let writers = try makeWriters(pipelineName: pipeline.name, appending: watch != nil)
        let (summary, stoppedInFlight) = try run(
            runner, writers: writers, rehearsal: settings.rehearsal, display: display,
            watching: watch?.settings(pipeline: pipeline))
        for writer in writers { try writer.finish(summary) }
        try journal?.close()
        return close(
            runner, summary: summary, stoppedInFlight: stoppedInFlight, progress: progress, display: display,
            logger: settings.logger)
    }

    /// The pipeline file, loaded and ready to run; nil once its errors are printed (a usage error).
    private func loadPipeline(environment: [String: String], offline: Bool, dryRun: Bool) throws -> Pipeline? {
        do {
            // Offline (validate), variables only network stages read are not needed: CI runs it without secrets.
            let pipeline = try Pipeline.load(path: self.pipeline, environment: environment, offline: offline)
            try pipeline.checkReadyToRun(offline: offline)
            return pipeline
        } catch let errors as PipelineFileErrors {
            for error in errors.errors { printError(error.description) }
            if dryRun, errors.errors.contains(where: { $0.description.contains("<unset ") }) {
                printError(
                    "ingest: a dry run renders an unset ${VAR} as <unset VAR>, which the option above refuses: set it")
            }
            // A file that is not there (or not a file) was said once already: no second line about it.
            if errors.errors.count > 1 || !errors.errors[0].message.hasPrefix("cannot read pipeline file") {
                printError("\(self.pipeline): not run: the pipeline file has \(errors.errors.count) error(s)")
            }
            return nil
        }
    }

    /// The report file's writer (`--report`) and the table on standard output, unless quiet or the report goes there.
    /// `appending` (watch): a JSON Lines or table report file is appended to as files finish.
    private func makeWriters(pipelineName: String, appending: Bool = false) throws -> [ReportWriter] {
        var writers: [ReportWriter] = []
        let fileFormat = reportFormat
        if let report {
            let format = fileFormat ?? ReportFormat.guess(fromPath: report) ?? .table
            let output = try ReportOutput(path: report, appending: appending && (format == .jsonl || format == .table))
            writers.append(try format.makeWriter(output: output, pipelineName: pipelineName))
            // `--report -` (or /dev/stdout) is the report on standard output, in place of the table there.
            if !quiet && !output.isStandardOutput {
                writers.append(try ReportFormat.table.makeWriter(output: ReportOutput(), pipelineName: pipelineName))
            }
        } else if !quiet || fileFormat != nil {
            writers.append(try (fileFormat ?? .table).makeWriter(output: ReportOutput(), pipelineName: pipelineName))
        }
        return writers
    }

    /// Runs the files, writing each report as it comes (and, for a dry run, the requests it would have sent); the
    /// summary and how many files an interruption stopped in flight.
    private func run(
        _ runner: Runner, writers: [ReportWriter], rehearsal: Rehearsal?, display: ProgressDisplay?,
        watching: WatchSettings? = nil
    ) throws -> (RunSummary, stoppedInFlight: Int) {
        func write(_ report: ItemReport) throws {
            for writer in writers { try writer.write(report) }
            if let rehearsal, !quiet {
                // A report on standard output (`--report -`) stays pure: the requests then go to standard error.
                DryRun.print(
                    rehearsal.take(path: report.path), toStandardError: writers.count == 1 && self.report != nil)
                DryRun.printDisposal(of: report, toStandardError: writers.count == 1 && self.report != nil)
            }
        }
        runner.cancelOnInterruptSignals { name in
            let say = { printError("ingest: \(name): stopping the files in flight (again to quit at once)") }
            if let display { display.withDisplayCleared(say) } else { say() }
        }
        var stoppedInFlight = 0
        let onItem = { (report: ItemReport) throws in
            if report.failures.contains(where: { $0.rule == .interrupted }) { stoppedInFlight += 1 }
            if let display { try display.withDisplayCleared { try write(report) } } else { try write(report) }
        }
        if let watching {
            let summary = try runner.watch(
                paths: paths, watching: watching,
                notice: { text in if let display { display.withDisplayCleared { printError(text) } } else { printError(text) } },
                onItem: onItem)
            return (summary, stoppedInFlight)
        }
        let summary = try runner.run(paths: paths.isEmpty ? ["."] : paths, onItem: onItem)
        return (summary, stoppedInFlight)
    }

    /// The closing lines — the summary with bytes and time, or what an interruption left for the next run — and the
    /// exit status.
    private func close(
        _ runner: Runner, summary: RunSummary, stoppedInFlight: Int, progress: RunProgress?,
        display: ProgressDisplay?, logger: Logger?
    ) -> ExitStatus {
        if let progress, runner.cancellation.reason == nil {
            display?.stop()
            printSummaryLine(summary, progress: progress, logger: logger)
        }
        if let reason = runner.cancellation.reason {
            display?.stop()
            printError(
                "ingest: interrupted by \(reason): \(summary.line); \(stoppedInFlight) file(s) stopped in flight and "
                    + "the files not started are left for the next run, which finishes the batch")
            return reason == "SIGTERM" ? .terminated : .interrupted
        }
        return summary.failed > 0 ? .ruleFailures : .success
    }

    /// `412 files, 3.1 GiB in 2m14s …` on standard error, or as a JSON log event with the counts as metadata.
    private func printSummaryLine(_ summary: RunSummary, progress: RunProgress, logger: Logger?) {
        let done = progress.snapshot()
        let line = RunSummaryLine.text(summary, bytes: done.bytesDone, seconds: done.elapsed)
        if log.format == .json, let logger {
            logger.info(
                "\(line)",
                metadata: [
                    "files": .stringConvertible(summary.total), "passed": .stringConvertible(summary.passed),
                    "failed": .stringConvertible(summary.failed), "skipped": .stringConvertible(summary.skipped),
                    "bytes": .stringConvertible(done.bytesDone),
                    "seconds": .stringConvertible((done.elapsed * 1000).rounded() / 1000),
                ])
        } else {
            printError(line)
        }
    }
}

struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run every stage of the pipeline over the files (uploads included).")

    @OptionGroup var options: RunOptions
    @OptionGroup(title: "Journal") var journal: JournalOptions
    @OptionGroup(title: "Service") var service: ServiceOptions

    @Flag(
        name: .long,
        help: ArgumentHelp(
            "Run the local stages and print each request the network stages would send; send nothing, keep no "
                + "journal.",
            discussion: "Secrets are redacted; an unset ${VAR} shows as <unset VAR>, and what only a server's answer "
                + "can provide as <ticket.upload_url>."))
    var dryRun = false

    func run() throws {
        throw try options.execute(offline: false, journal: journal, dryRun: dryRun, service: service)
    }
}

struct ValidateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Pre-flight: run only the stages that need no network (validate, probe, geohash …); never uploads.")

    @OptionGroup var options: RunOptions

    func run() throws { throw try options.execute(offline: true) }
}

/// How `ingest run` uses the journal.
struct JournalOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The journal: a file (default: journal.sqlite beside the work folder, i.e. .ingest/journal.sqlite), or "
                + "a postgres:// URL shared by workers on several machines.",
            discussion: "With PostgreSQL, each worker leases a file before working on it; files other workers hold "
                + "are waited for, and a worker that stops renewing its leases (a crash) has its files taken over.",
            valueName: "path|url"))
    var journal: String?

    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp(
            "Seconds a PostgreSQL lease lasts unless renewed (1 to 86400; default: 60): how long a crashed "
                + "worker's files wait.",
            valueName: "seconds"),
        transform: { try CLINumber.seconds($0, "--lease-seconds", CLINumber.leaseSeconds) })
    var leaseSeconds: Double = 60

    @Flag(name: .long, help: "Keep no journal: every file is worked on, and nothing is recorded for a later run.")
    var noJournal = false

    @Flag(name: .long, help: "Redo every file, even those the journal has as done.")
    var force = false

    @Flag(
        name: .long,
        help: ArgumentHelp(
            "Redo only files that failed or were interrupted; leave new and changed files alone.",
            discussion: "Without it, a run already redoes failed files along with new and changed ones."))
    var retryFailed = false

    func validate() throws {
        if force && retryFailed { throw ValidationError("--force and --retry-failed cannot be used together") }
        if noJournal && (force || retryFailed || journal != nil) {
            throw ValidationError("--no-journal cannot be used with --journal, --force or --retry-failed")
        }
    }

    /// The SQLite file, or the PostgreSQL database (locking the work folder: one worker per work folder).
    func open(workDirectory: String) throws -> any JournalStore {
        if let journal, PostgresJournal.isURL(journal) {
            let trimmed =
                workDirectory.count > 1 && workDirectory.hasSuffix("/")
                ? String(workDirectory.dropLast()) : workDirectory
            let parent = (trimmed as NSString).deletingLastPathComponent
            if !parent.isEmpty {
                try? FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
            }
            return try PostgresJournal(url: journal, leaseSeconds: leaseSeconds, workLockPath: trimmed + ".lock")
        }
        return try SQLiteJournal(path: path(workDirectory: workDirectory))
    }

    var policy: ResumePolicy { force ? .force : retryFailed ? .retryFailed : .resume }

    func path(workDirectory: String) -> String {
        journal ?? JournalOptions.defaultPath(workDirectory: workDirectory)
    }

    /// `journal.sqlite` beside the work folder when that folder is a `work` folder of its own (`.ingest/work`
    /// gives `.ingest/journal.sqlite`); otherwise `.ingest/journal.sqlite` in the current folder, so
    /// `--work-dir /tmp` never puts the journal at `/journal.sqlite` (nor inside a folder that gets emptied).
    static func defaultPath(workDirectory: String) -> String {
        let trimmed =
            workDirectory.count > 1 && workDirectory.hasSuffix("/") ? String(workDirectory.dropLast()) : workDirectory
        let parent = (trimmed as NSString).deletingLastPathComponent
        guard (trimmed as NSString).lastPathComponent == "work", !parent.isEmpty, parent != "/" else {
            return ".ingest/journal.sqlite"
        }
        return parent + "/journal.sqlite"
    }
}
