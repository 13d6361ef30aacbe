import ArgumentParser
import Foundation
import IngestRun
import Logging

/// `-v`/`-vv` and `--log-format`, shared by `run` and `validate`: what a run says on standard error as it goes.
struct LogOptions: ParsableArguments {
    @Flag(
        name: [.short, .long],
        help: ArgumentHelp(
            "Print each HTTP request and attempt on standard error as it happens (-vv: with response headers).",
            discussion: "Method, URL (secrets redacted), status, bytes, duration, and each retry with its reason."))
    var verbose: Int

    @Option(
        name: .long,
        help: ArgumentHelp(
            "How -v events are written: text, or json (JSON Lines on standard error; logs requests even without -v).",
            valueName: "format"))
    var logFormat: String = "text"

    var format: LogFormat { LogFormat(rawValue: logFormat) ?? .text }

    func validate() throws {
        if LogFormat(rawValue: logFormat) == nil {
            throw ValidationError("--log-format must be one of: text, json (found '\(logFormat)')")
        }
    }

    /// The run's logger, or nil when nothing is to be logged. Lines go to standard error, with the live display
    /// (if any) stepping aside for each.
    func makeLogger(display: ProgressDisplay?) -> Logger? {
        let format = LogFormat(rawValue: logFormat) ?? .text
        let level = RunLogLevel.level(verbosity: verbose, format: format)
        guard level <= .info else { return nil }
        let write: @Sendable (String) -> Void = { line in
            let data = Data((line + "\n").utf8)
            if let display {
                display.withDisplayCleared { FileHandle.standardError.write(data) }
            } else {
                FileHandle.standardError.write(data)
            }
        }
        var logger = Logger(label: "ingest") { _ in RunLogHandler(format: format, level: level, write: write) }
        logger.logLevel = level
        return logger
    }
}
