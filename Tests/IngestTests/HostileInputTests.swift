import Foundation
import Testing

@testable import Ingest

/// Inputs made to hurt: a walk that would not end.
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
        for level in 0..<levels { try folder.folder("tree/d\(level)") }
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
}
