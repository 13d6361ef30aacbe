import ArgumentParser
import Foundation
import IngestConfig
import IngestCore
import IngestRun

/// `ingest watch`: `run` that goes on over the files landing in the folders until SIGINT or SIGTERM.
struct WatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Take the files in the folders, then each file that lands in them, through the pipeline (until "
            + "SIGINT/SIGTERM).",
        discussion: """
            A file is taken once its size and modification time have stayed the same for the settle time and, when \
            it is written on this machine, once its writer closed it or renamed it into place. Names writers use \
            while copying (.*, *.part, *.tmp, *.crdownload, ~$*) are never taken. The journal makes it exactly once \
            across restarts; SIGINT exits 130 and SIGTERM 143 after the files in flight, as `run` does.
            """)

    @OptionGroup var options: RunOptions
    @OptionGroup(title: "Journal") var journal: JournalOptions
    @OptionGroup(title: "Watching") var watch: WatchOptions
    @OptionGroup(title: "Service") var service: ServiceOptions

    func validate() throws {
        if options.paths.isEmpty { throw ValidationError("watch needs at least one folder to watch") }
    }

    func run() throws {
        for path in options.paths {
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), !isFolder.boolValue {
                printError("ingest: \(path): not a folder: watch takes folders (nothing ran)")
                throw ExitStatus.usage
            }
        }
        throw try options.execute(offline: false, journal: journal, service: service, watch: watch)
    }
}

/// How `ingest watch` learns of files and decides that they have landed.
struct WatchOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "How long a file's size and mtime must stay the same before it is taken (default: the pipeline's "
                + "settle, else 5s; up to 1 day).",
            valueName: "duration"),
        transform: { try WatchOptions.duration($0, "--settle", allowZero: true) })
    var settle: Double?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Scan the folders at this interval instead of using inotify (NFS/SMB mounts, where inotify does not "
                + "see what other machines write).",
            valueName: "duration"),
        transform: { try WatchOptions.duration($0, "--poll", allowZero: false) })
    var poll: Double?

    func settings(pipeline: Pipeline) -> WatchSettings {
        WatchSettings(settle: settle ?? pipeline.settle ?? WatchSettings.defaultSettle, poll: poll)
    }

    /// `0.3s`, `5`, `1m30s`: between 0 (or 10 ms) and a day.
    static func duration(_ text: String, _ option: String, allowZero: Bool) throws -> Double {
        let lowest = allowZero ? 0 : 0.01
        guard let value = DurationValue.parse(text), value.seconds >= lowest, value.seconds <= Pipeline.maxSettle
        else {
            let shown = text.count > 200 ? "'\(text.prefix(200))…'" : "'\(text)'"
            throw ValidationError(
                "\(option) must be a duration (5s, 500ms, 1m) from \(allowZero ? "0" : "10ms") to 1 day, found \(shown)"
            )
        }
        return value.seconds
    }
}
