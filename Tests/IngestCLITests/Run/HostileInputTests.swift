import Foundation
import Testing

@testable import IngestConfig
@testable import IngestCore
@testable import IngestRun
@testable import IngestTestSupport

/// Inputs made to hurt: a walk that would not end, and file names that try to write on the terminal.
@Suite struct HostileInputTests {
    let ingest = TestPaths.ingest

    /// Whether process `pid` has its own handler for `signal` yet (Linux: `SigCgt` in `/proc/PID/status`).
    func catches(_ pid: Int32, _ signal: Int32) -> Bool {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("SigCgt:") }),
            let mask = UInt64(line.dropFirst("SigCgt:".count).trimmingCharacters(in: .whitespaces), radix: 16)
        else { return false }
        return mask & (1 << UInt64(signal - 1)) != 0
    }

    /// Ctrl-C while the walk goes on: 40 folders, each with two symlinks to the next, make 2^39 paths to follow
    /// and not one file, so no file ever starts and only the walk itself can notice the signal. Before, the run
    /// waited for the walk to end (never); now it stops at the next entry and exits 130 with its summary.
    @Test func ctrlCStopsALongWalk() throws {
        let folder = try TemporaryFolder("walk-sigint")
        defer { folder.remove() }
        let levels = 40
        for level in 0..<levels { _ = try folder.folder("tree/d\(level)") }
        for level in 0..<(levels - 1) {
            for link in ["x", "y"] {
                try FileManager.default.createSymbolicLink(
                    atPath: folder.path + "/tree/d\(level)/\(link)", withDestinationPath: "../d\(level + 1)")
            }
        }
        let pipeline = try folder.file(
            "p.yml",
            "version: 1\nname: walk\ninput:\n  follow_symlinks: true\n  include: ['**/*.mov']\nstages:\n"
                + "  - validate: { extensions: [mov], sniff: false }\n")
        let errors = Pipe()
        let process = try startIngest(["run", pipeline, "tree/d0"], in: folder.path, standardError: errors)
        // The handler is installed just before the walk starts; the walk then never ends on its own.
        var handling = false
        for _ in 0..<400 where process.isRunning {
            if catches(process.processIdentifier, SIGINT) {
                handling = true
                break
            }
            usleep(50_000)
        }
        try #require(handling, "the run never installed its SIGINT handler")
        usleep(500_000)
        kill(process.processIdentifier, SIGINT)
        var ended = false
        for _ in 0..<600 {
            if !process.isRunning {
                ended = true
                break
            }
            usleep(50_000)
        }
        if !ended {
            kill(process.processIdentifier, SIGKILL)
            Issue.record("ingest kept walking 30 s after one SIGINT")
        }
        process.waitUntilExit()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 130, "\(stderr)")
        #expect(stderr.contains("interrupted by SIGINT: 0 passed, 0 failed, 0 skipped"), "\(stderr)")
    }

    /// The walker itself ends once its run is cancelled, between two entries.
    @Test func walkerEndsWhenTheRunIsCancelled() throws {
        let folder = try TemporaryFolder("walk-cancel")
        defer { folder.remove() }
        for index in 0..<5 { try folder.file("f\(index).txt") }
        let cancellation = RunCancellation()
        let walker = InputWalker(paths: [folder.path], spec: InputSpec(), cancellation: cancellation)
        #expect(walker.next()?.relativePath == "f0.txt")
        cancellation.cancel(reason: "SIGINT")
        #expect(walker.next() == nil)
    }

    /// A file named `clip⏎ok    holiday.mov ESC[8m`: before, the table printed a forged `ok` line and an escape
    /// that hides what follows on a terminal. Now each file is one line (its failure beneath), controls shown as
    /// escapes in the name and in the message quoting it; the JSON Lines report keeps the name exactly.
    @Test func controlCharactersInNamesAreEscapedInTheTable() throws {
        let folder = try TemporaryFolder("names-ctl")
        defer { folder.remove() }
        let evil = "clip\nok    holiday.mov\u{1B}[8m"
        try folder.file("media/a.txt", "hello")
        try folder.file("media/" + evil, "hello")
        let pipeline = try folder.file(
            "p.yml", "version: 1\nname: names\nstages:\n  - validate: { extensions: [txt], sniff: false }\n")
        let result = try runCommand(
            ingest, ["run", pipeline, "media", "--report", "r.jsonl"], directory: folder.path)
        #expect(result.status == 1, "\(result.stderr)")
        #expect(!result.stdout.contains("\u{1B}"))
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(
            lines == [
                "ok    media/a.txt",
                #"FAIL  media/clip\nok    holiday.mov\x1b[8m"#,
                #"      validate.extensions: extension .mov\x1b[8m is not allowed (expected .txt)"#,
                "1 passed, 1 failed, 0 skipped", "",
            ], "\(result.stdout)")

        // The JSON Lines report has the name as it is (JSON escapes it itself).
        let objects = try String(contentsOfFile: folder.path + "/r.jsonl", encoding: .utf8).split(separator: "\n")
            .map { try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(objects.map { $0["path"] as? String } == ["media/a.txt", "media/" + evil])

        // `ingest status` lists the failed file the same way.
        let status = try runCommand(ingest, ["status"], directory: folder.path)
        #expect(!status.stdout.contains("\u{1B}"))
        #expect(status.stdout.contains(#"FAIL  media/clip\nok    holiday.mov\x1b[8m"#), "\(status.stdout)")
        #expect(!status.stdout.split(separator: "\n").contains { $0.hasPrefix("ok") }, "\(status.stdout)")
    }

    /// The live line per file on a terminal escapes the name the same way.
    @Test func progressLinesEscapeNames() {
        let active = RunProgress.Active(
            path: "clip\nok    holiday.mov\u{1B}[8m", stage: "upload", bytesDone: 0, bytesTotal: nil)
        #expect(ProgressDisplay.activeLine(active) == #"  upload clip\nok    holiday.mov\x1b[8m"#)
    }

    @Test func escapes() {
        #expect(TerminalText.escaped("plain name é 🎞.mov") == "plain name é 🎞.mov")
        #expect(TerminalText.escaped("a\nb\rc\td") == #"a\nb\rc\td"#)
        #expect(TerminalText.escaped("\u{1B}[8m\u{0}\u{7F}") == #"\x1b[8m\x00\x7f"#)
        // C1 controls (U+009B is a one-character CSI on some terminals) and a backslash that would forge an escape.
        #expect(TerminalText.escaped("\u{9B}8m\u{85}\u{A0}") == "\\x9b8m\\x85\u{A0}")
        #expect(TerminalText.escaped(#"C:\x1b"#) == #"C:\\x1b"#)
    }
}
