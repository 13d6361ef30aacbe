import Foundation
import Testing

@testable import IngestCore
@testable import IngestTestSupport

/// `ingest watch` as the real world uses it: folders that appear, a service stopped mid-upload, an event queue that
/// overflows, and a mount that only polling sees. Each test waits on the report the watcher writes as files finish.
/// (Writers that take their time and renames into place are `WatchClockTests`: the settle time on a driven clock.)
@Suite(.serialized) struct WatchTests {
    /// A watch on a folder that already holds `first.m4a`, once that file is taken (so the watches are in place).
    func started(_ label: String, _ arguments: [String] = ["--settle", "0.3s"]) throws -> (
        TemporaryFolder, WatchProcess
    ) {
        let folder = try TemporaryFolder(label)
        try FileManager.default.createDirectory(atPath: folder.path + "/in", withIntermediateDirectories: true)
        try sample("voice.m4a").write(to: URL(fileURLWithPath: folder.path + "/in/first.m4a"))
        let pipeline = try folder.file("p.yml", watchPipeline())
        let watch = try WatchProcess(folder: folder.path, pipeline: pipeline, arguments)
        try #require(watch.waitForReports("first.m4a"), "the file already there was never taken: \(watch.stderr)")
        return (folder, watch)
    }

    @Test func aFolderCreatedAfterTheStartIsWatchedAndItsFilesTaken() throws {
        let (folder, watch) = try started("watch-folder")
        defer { folder.remove() }
        // Made and filled at once: the file may land before the new folder's watch is in place.
        try FileManager.default.createDirectory(
            atPath: folder.path + "/in/2026/day1/card", withIntermediateDirectories: true)
        try sample("plain.mov").write(to: URL(fileURLWithPath: folder.path + "/in/2026/day1/card/a.mov"))
        #expect(watch.waitForReports("2026/day1/card/a.mov"), "\(watch.stderr)")
        // And a file written into it later, through its own watch.
        try sample("voice.m4a").write(to: URL(fileURLWithPath: folder.path + "/in/2026/day1/card/b.m4a"))
        #expect(watch.waitForReports("2026/day1/card/b.m4a"), "\(watch.stderr)")
        #expect(watch.stop() == 143)
        #expect(watch.reports("2026/day1/card/a.mov").first?["status"] as? String == "passed")
    }

    @Test func pollingTakesANewFile() throws {
        let (folder, watch) = try started("watch-poll", ["--settle", "0.3s", "--poll", "0.2s"])
        defer { folder.remove() }
        try FileManager.default.createDirectory(atPath: folder.path + "/in/sub", withIntermediateDirectories: true)
        try sample("voice.m4a").write(to: URL(fileURLWithPath: folder.path + "/in/sub/new.m4a"))
        #expect(watch.waitForReports("sub/new.m4a"), "\(watch.stderr)")
        #expect(watch.stop(SIGINT) == 130)
        #expect(watch.reports("sub/new.m4a").count == 1)
        #expect(watch.reports("first.m4a").count == 1)
    }

    /// The watcher is stopped (SIGSTOP) while more events arrive than the kernel queues for it
    /// (`fs.inotify.max_queued_events`; the flood is on hidden names, which are never taken); a file lands after the
    /// queue is full, so its events are lost. Once resumed, the overflow makes it rescan, and the file is taken.
    @Test func anEventQueueOverflowIsFollowedByARescanThatMissesNothing() throws {
        let (folder, watch) = try started("watch-overflow")
        defer { folder.remove() }
        let limit =
            Int(
                (try String(contentsOfFile: "/proc/sys/fs/inotify/max_queued_events", encoding: .utf8))
                    .trimmingCharacters(in: .whitespacesAndNewlines)) ?? 16384
        kill(watch.process.processIdentifier, SIGSTOP)
        let flood = [folder.path + "/in/.flood-a", folder.path + "/in/.flood-b"].map { path -> FileHandle in
            _ = FileManager.default.createFile(atPath: path, contents: nil)
            return FileHandle(forWritingAtPath: path)!
        }
        // Alternating between two files: the kernel merges only an event identical to the last one queued.
        for index in 0..<(2 * limit) { try flood[index % 2].write(contentsOf: Data([1])) }
        for handle in flood { try handle.close() }
        try sample("voice.m4a").write(to: URL(fileURLWithPath: folder.path + "/in/late.m4a"))
        kill(watch.process.processIdentifier, SIGCONT)
        #expect(watch.waitForReports("late.m4a"), "\(watch.stderr)")
        #expect(watch.stop() == 143)
        #expect(watch.stderr.contains("event queue overflowed"), "\(watch.stderr)")
        #expect(watch.reports("late.m4a").count == 1)
        #expect(watch.reports(".flood-a").isEmpty)
    }

    // MARK: - Out of watches (root: `fs.inotify.max_user_watches` is lowered for the moment the watcher starts)

    static let limitFile = "/proc/sys/fs/inotify/max_user_watches"

    @Test(
        .enabled(
            if: getuid() == 0 && FileManager.default.isWritableFile(atPath: limitFile),
            "lowering fs.inotify.max_user_watches needs root and a writable \(limitFile)"))
    func runningOutOfWatchesSaysSoAndFallsBackToPolling() throws {
        let folder = try TemporaryFolder("watch-enospc")
        defer { folder.remove() }
        try FileManager.default.createDirectory(atPath: folder.path + "/in/a/b", withIntermediateDirectories: true)
        try sample("voice.m4a").write(to: URL(fileURLWithPath: folder.path + "/in/first.m4a"))
        let pipeline = try folder.file("p.yml", watchPipeline())
        let saved = try String(contentsOfFile: WatchTests.limitFile, encoding: .utf8)
        try "1\n".write(toFile: WatchTests.limitFile, atomically: false, encoding: .utf8)
        let watch: WatchProcess
        do {
            defer { try? saved.write(toFile: WatchTests.limitFile, atomically: false, encoding: .utf8) }
            watch = try WatchProcess(folder: folder.path, pipeline: pipeline, ["--settle", "0.3s"])
            _ = watch.eventually(attempts: 200) { watch.stderr.contains("max_user_watches") }
        }
        #expect(watch.stderr.contains("out of inotify watches"), "\(watch.stderr)")
        #expect(watch.stderr.contains("raise fs.inotify.max_user_watches"), "\(watch.stderr)")
        #expect(watch.waitForReports("first.m4a"))
        // Found by the scans that took over.
        try sample("voice.m4a").write(to: URL(fileURLWithPath: folder.path + "/in/a/b/later.m4a"))
        #expect(watch.waitForReports("a/b/later.m4a", attempts: 800), "\(watch.stderr)")
        #expect(watch.stop() == 143)
    }
}
