import Foundation
import Testing

@testable import IngestConfig
@testable import IngestCore
@testable import IngestRun
@testable import IngestTestSupport

/// Concurrency is a ceiling, not a cost: workers start as files arrive, so slots no file uses make no thread.
/// `concurrency: 1000000` over 12 files took about 27 s: the runner started a thread (8 MiB stack) per slot before
/// the first file, and all but 12 of them found nothing to do.
@Suite struct WorkerSlotTests {
    /// The kernel id of a thread started now. Ids are handed out in increasing order, so the difference between two
    /// such ids bounds the threads (and processes) started in between.
    static func freshThreadID() -> Int {
        final class Box: @unchecked Sendable { var id = 0 }
        let box = Box()
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            // "/proc/thread-self" links to "PID/task/TID".
            let link = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
            box.id = Int(link.split(separator: "/").last ?? "") ?? 0
            done.signal()
        }
        thread.start()
        done.wait()
        return box.id
    }

    @Test func slotsNoFileUsesMakeNoThread() throws {
        let folder = try TemporaryFolder("slots")
        defer { folder.remove() }
        for index in 0..<12 { try folder.file("in/\(index).txt", "hello") }
        let pipeline = try Pipeline.parse(
            yaml: "version: 1\nname: slots\nconcurrency: 1024\nstages:\n  - validate: {extensions: [txt]}\n",
            source: "test.yml", environment: [:])
        let runner = Runner(pipeline: pipeline, settings: RunSettings(workDirectory: folder.path + "/work"))
        let before = Self.freshThreadID()
        let summary = try runner.run(paths: [folder.path + "/in"]) { _ in }
        let after = Self.freshThreadID()
        #expect(summary.passed == 12)
        // 12 workers and one that found no file left; other processes on the machine may start a few meanwhile.
        // Ids wrap at pid_max: then the count says nothing.
        try #require(before > 0 && after > before)
        #expect(after - before < 500, "\(after - before) threads started for 12 files at concurrency 1024")
    }
}
