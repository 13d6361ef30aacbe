import ArgumentParser
import Foundation
import IngestCore

/// The `ingest` command: a thin root whose subcommands live in their own files. Exit codes are part of the
/// interface scripts and CI rely on, so they are mapped here in one place.
@main
struct IngestCLI: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ingest",
        abstract: "Validate, probe, transcode and upload folders of recordings and photos through a pipeline file.",
        discussion: """
            Exit codes:
              0  every file passed (skipped files do not count as failures)
              1  one or more files broke a rule
              2  usage error, or the pipeline file is invalid (nothing ran)
              3  internal or I/O error (e.g. the report could not be written)
              130  stopped by Ctrl-C (SIGINT); 143 by SIGTERM: files in flight were stopped, the next run resumes
            """,
        version: VersionInfo.text,
        subcommands: [
            RunCommand.self, ValidateCommand.self, ProbeCommand.self, LintCommand.self, SchemaCommand.self,
            PresignCommand.self, StatusCommand.self, ReportCommand.self, TestCommand.self, WatchCommand.self,
        ]
    )

    static func main() {
        let command: ParsableCommand
        do {
            command = try parseAsRoot()
        } catch {
            // Help and --version exit 0; every parse or validation error is a usage error: 2.
            let code = exitCode(for: error)
            if code == .success { exit(withError: error) }
            if let unknown = UnknownCommand.message(arguments: Array(CommandLine.arguments.dropFirst())) {
                printError(unknown)
                Foundation.exit(ExitStatus.usage.rawValue)
            }
            FileHandle.standardError.write(Data((Redaction.text(fullMessage(for: error)) + "\n").utf8))
            Foundation.exit(ExitStatus.usage.rawValue)
        }
        do {
            var runnable = command
            try runnable.run()
            end(0)
        } catch let status as ExitStatus {
            end(status.rawValue)
        } catch let code as ExitCode {
            end(code.rawValue)
        } catch {
            // `--help` given to a subcommand arrives here as a clean exit; a ValidationError from `run` is usage.
            if exitCode(for: error) == .success { exit(withError: error) }
            if error is ValidationError {
                printError(fullMessage(for: error))
                Foundation.exit(ExitStatus.usage.rawValue)
            }
            printError("ingest: \(error)")
            end(ExitStatus.internalError.rawValue)
        }
    }

    /// Ends the process once a command is done, skipping library destructors: FFmpeg's codecs pull in about a
    /// hundred shared libraries (x265, rav1e, librsvg …) whose exit handlers touch ~3 MiB of pages on the way out,
    /// the peak RSS of a whole upload. Output streams are flushed; journal and reports were closed by the command.
    static func end(_ code: Int32) -> Never {
        fflush(nil)
        _exit(code)
    }
}

/// The documented exit codes.
enum ExitStatus: Int32, Error {
    case success = 0
    case ruleFailures = 1
    case usage = 2
    case internalError = 3
    /// 128 + SIGINT, as shells report a command stopped by Ctrl-C.
    case interrupted = 130
    /// 128 + SIGTERM.
    case terminated = 143
}

/// A message on standard error, through the same redaction as every report.
func printError(_ text: String) {
    FileHandle.standardError.write(Data((Redaction.text(text) + "\n").utf8))
}

/// Runs `body`; a `Failure` it throws is said on standard error after `prefix` (`ingest presign: …`) and ends the
/// command with `status`. Other errors go through as they are.
func exiting<Result, Failure: Error>(
    _ status: ExitStatus, on _: Failure.Type, saying prefix: String, _ body: () throws -> Result
) throws -> Result {
    do {
        return try body()
    } catch let error as Failure {
        printError("\(prefix): \(error)")
        throw status
    }
}
