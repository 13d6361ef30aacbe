import Foundation
import NativeSystem
import Testing

@testable import Ingest
@testable import IngestRun
@testable import IngestStages

/// Runs that share a work folder own what they write; the work folder and the journal are never inputs; a path
/// that does not exist is a usage error; `status` beside a live run says which files are in progress.
@Suite(.serialized) struct RunWorkFolderTests {
    let ingest = TestPaths.ingest

    /// Regular files under `folder` (recursively), other than the work folder's marker and run lock files.
    static func workFiles(_ folder: String) -> [String] {
        let all = FileManager.default.enumerator(atPath: folder)?.allObjects as? [String] ?? []
        return all.filter { name in
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: folder + "/" + name, isDirectory: &isDirectory)
            return !isDirectory.boolValue && name != WorkFolder.marker && !name.hasSuffix(".lock")
        }
    }

    static func photo(_ path: String) throws {
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let made = try runTool(
            "ffmpeg", ["-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240", "-frames:v", "1", path])
        try #require(made.status == 0, "ffmpeg: \(made.stderr)")
    }

    /// Starts `ingest` with `arguments` in `folder`; its output goes to files there.
    static func start(_ arguments: [String], in folder: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestPaths.ingest)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: folder)
        process.environment = environmentWithoutProxies()
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Polls `condition` every 50 ms for up to 60 s; true once it holds.
    static func eventually(_ condition: () throws -> Bool) rethrows -> Bool {
        for _ in 0..<1_200 {
            if try condition() { return true }
            usleep(50_000)
        }
        return false
    }

    /// A second run with its own journal, sharing `.ingest/work`, cleared the first run's work files while the
    /// first waited for its upload ticket: the first then failed to upload. The first run is frozen (SIGSTOP) while
    /// its transcoded photo waits in the work folder, the second runs to completion, and the first must succeed.
    @Test func aSecondRunLeavesTheFirstRunsWorkFilesAlone() throws {
        let backend = try FixtureBackend(
            faults: #"[{"method": "POST", "path": "/upload-url", "action": "delay", "seconds": 2}]"#)
        defer { backend.stop() }
        let folder = try TemporaryFolder("shared-work")
        defer { folder.remove() }
        try Self.photo(folder.path + "/first/a.jpg")
        try Self.photo(folder.path + "/second/b.jpg")
        let firstPipeline = try folder.file(
            "first.yml",
            """
            version: 1
            name: first
            stages:
              - jpeg: { quality: 0.8 }
              - request: { url: "\(backend.base)/upload-url", json: { file_extension: jpg }, as: ticket }
              - upload: { method: put, url: "{{ticket.upload_url}}", content_type: image/jpeg, expect: [200] }

            """)
        let secondPipeline = try folder.file(
            "second.yml",
            "version: 1\nname: second\nstages:\n  - jpeg: { quality: 0.8 }\n  - upload: { method: local, dir: dest }\n")
        let work = folder.path + "/.ingest/work"
        let first = try Self.start(["run", firstPipeline, "first", "--report", "first.jsonl", "-q"], in: folder.path)
        defer { if first.isRunning { kill(first.processIdentifier, SIGKILL) } }
        // Frozen while its transcoded photo is in the work folder, waiting for the ticket.
        var held: [String] = []
        let frozen = Self.eventually {
            guard !Self.workFiles(work).isEmpty else { return false }
            kill(first.processIdentifier, SIGSTOP)
            held = Self.workFiles(work)
            if held.isEmpty { kill(first.processIdentifier, SIGCONT) }
            return !held.isEmpty
        }
        try #require(frozen, "the first run never wrote its work file")
        let second = try runCommand(
            ingest, ["run", secondPipeline, "second", "--journal", "second.sqlite"], directory: folder.path)
        #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
        #expect(FileManager.default.fileExists(atPath: folder.path + "/dest/b.jpg"))
        for file in held {
            #expect(FileManager.default.fileExists(atPath: work + "/" + file), "the second run removed \(file)")
        }
        kill(first.processIdentifier, SIGCONT)
        first.waitUntilExit()
        let report = (try? String(contentsOfFile: folder.path + "/first.jsonl", encoding: .utf8)) ?? ""
        #expect(first.terminationStatus == 0, "\(report)")
        #expect(report.contains(#""status":"passed""#), "\(report)")
        #expect(try backend.objects().count == 1)
        #expect(Self.workFiles(work).isEmpty, "\(Self.workFiles(work))")
    }

    /// The folder of a run that died is removed by the next run (its lock is free); a live run's is not.
    @Test func onlyDeadRunsFoldersAreCleared() throws {
        let folder = try TemporaryFolder("run-folders")
        defer { folder.remove() }
        let base = folder.path + "/work"
        try folder.file("work/run-999999-deadbeef/0-jpeg/0-in/x.jpg.jpg")
        try folder.file("work/run-999999-deadbeef.lock", "999999\n")
        try folder.file("work/run-1-0live000/0-jpeg/0-in/y.jpg.jpg")
        try folder.file("work/run-1-0live000.lock", "1\n")
        let live = try FileLock(path: base + "/run-1-0live000.lock", create: false)
        let mine = try RunWorkFolder(base: base)
        #expect(!FileManager.default.fileExists(atPath: base + "/run-999999-deadbeef"))
        #expect(!FileManager.default.fileExists(atPath: base + "/run-999999-deadbeef.lock"))
        #expect(FileManager.default.fileExists(atPath: base + "/run-1-0live000/0-jpeg/0-in/y.jpg.jpg"))
        #expect(FileManager.default.fileExists(atPath: mine.path))
        mine.remove()
        #expect(!FileManager.default.fileExists(atPath: mine.path))
        #expect(!FileManager.default.fileExists(atPath: mine.path + ".lock"))
        withExtendedLifetime(live) {}
    }

    /// With no path, a run walks the current folder: its own `.ingest` journal, side files and work folder were
    /// taken as inputs. They never are, wherever they are (`--journal`, `--work-dir` elsewhere in the tree too).
    @Test func theJournalAndTheWorkFolderAreNeverInputs() throws {
        let folder = try TemporaryFolder("self-walk")
        defer { folder.remove() }
        let pipeline = try folder.file(
            "p.yml", "version: 1\nname: self-walk\nstages:\n  - validate: { max_bytes: 10MB, sniff: false }\n")
        // Each case runs in a tree of its own; the pipeline and the report are outside it.
        let cases: [(tree: String, options: [String], hidden: [String])] = [
            ("default", [], [".ingest/"]),
            ("elsewhere", ["--journal", "state/j.sqlite", "--work-dir", "state/work"], ["state/"]),
        ]
        for (tree, options, hidden) in cases {
            try folder.file("\(tree)/a.txt", "a")
            try folder.file("\(tree)/\(hidden[0])work/left.txt", "left by someone")
            for round in 0..<2 {
                let result = try runCommand(
                    ingest, ["run", pipeline, "--report", "../r.jsonl", "-q"] + options,
                    directory: folder.path + "/" + tree)
                #expect(result.status == 0, "\(tree) \(round): \(result.stderr)")
                let report = try String(contentsOfFile: folder.path + "/r.jsonl", encoding: .utf8)
                for name in hidden { #expect(!report.contains(name), "\(tree) \(round): \(report)") }
                #expect(report.contains("a.txt"))
            }
        }
        // Named outright, the work folder is still not an input.
        let named = try runCommand(
            ingest, ["run", pipeline, ".ingest/work", "--report", "../n.jsonl", "-q", "--no-journal"],
            directory: folder.path + "/default")
        #expect(named.status == 0, "\(named.stderr)")
        #expect(try String(contentsOfFile: folder.path + "/n.jsonl", encoding: .utf8).isEmpty)
    }

    /// A path that does not exist is a usage error (exit 2) naming it; nothing runs and no journal is made.
    @Test func aMissingPathIsAUsageError() throws {
        let folder = try TemporaryFolder("missing-path")
        defer { folder.remove() }
        try folder.file("media/a.txt", "a")
        try FileManager.default.createSymbolicLink(atPath: folder.path + "/dangling", withDestinationPath: "gone")
        let pipeline = try folder.file("p.yml", "version: 1\nname: m\nstages:\n  - validate: { sniff: false }\n")
        for command in ["run", "validate"] {
            let result = try runCommand(
                ingest, [command, pipeline, "media", "nope", "dangling"], directory: folder.path)
            #expect(result.status == 2, "\(command): \(result.stdout)")
            #expect(result.stderr.contains("nope: no such file or folder"), "\(result.stderr)")
            #expect(result.stderr.contains("dangling: a symlink to a file or folder that does not exist"))
            #expect(!result.stdout.contains("media/a.txt"), "\(result.stdout)")
        }
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/.ingest/journal.sqlite"))
    }

    /// `ingest status` beside a live run: the file it works on is "in progress (held by pid N)", not interrupted,
    /// and counts as no failure; once the run is killed, it is interrupted.
    @Test func statusShowsFilesInProgress() throws {
        let backend = try FixtureBackend(
            faults: #"[{"method": "POST", "path": "/upload-url", "action": "delay", "seconds": 60}]"#)
        defer { backend.stop() }
        let folder = try TemporaryFolder("status-live")
        defer { folder.remove() }
        try folder.file("in/a.jpg", "not really a photo")
        let pipeline = try folder.file(
            "p.yml",
            """
            version: 1
            name: live
            stages:
              - request: { url: "\(backend.base)/upload-url", json: { file_extension: jpg }, as: ticket }

            """)
        let run = try Self.start(["run", pipeline, "in", "-q"], in: folder.path)
        defer { if run.isRunning { kill(run.processIdentifier, SIGKILL) } }
        var status = CommandResult(status: -1, stdout: "", stderr: "")
        let seen = try Self.eventually {
            status = try runCommand(ingest, ["status"], directory: folder.path)
            return status.stdout.contains("in/a.jpg")
        }
        try #require(seen, "\(status.stdout)\(status.stderr)")
        #expect(
            status.stdout.contains("RUN   in/a.jpg  in progress (held by pid \(run.processIdentifier))"),
            "\(status.stdout)")
        #expect(status.stdout.contains("       0  interrupted"), "\(status.stdout)")
        #expect(status.stdout.contains("       1  in progress"), "\(status.stdout)")
        #expect(status.status == 0)
        kill(run.processIdentifier, SIGKILL)
        run.waitUntilExit()
        let after = try runCommand(ingest, ["status"], directory: folder.path)
        #expect(after.stdout.contains("STOP  in/a.jpg  interrupted in stage request"), "\(after.stdout)")
        #expect(after.stdout.contains("       1  interrupted"), "\(after.stdout)")
        #expect(after.status == 1)
    }
}
