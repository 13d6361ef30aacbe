import Foundation
import NativeSystem
import Testing

@testable import IngestConfig
@testable import IngestCore
@testable import IngestJournal
@testable import IngestRun
@testable import IngestTestSupport

/// Issue 32 §6: `ingest watch` measures its settle time, the set-aside files' due times and its scan interval on the
/// run's clock (`RunSettings.clock`), so these tests drive time instead of sleeping through it: a 2 s settle or a
/// 30 s scan interval passes when the test says so. (The end-to-end runs of the real binary are `WatchTests`.)
@Suite struct WatchClockTests {
    /// A feed (and its watcher) on `in/` of `folder`, its time `clock`'s; no startup walk (files are noted by events
    /// and scans only).
    struct Watch {
        let tree: WatchTree
        let feed: WatchFeed
        let watcher: FolderWatcher
        let cancellation = RunCancellation()

        init(_ folder: TemporaryFolder, settle: Double, poll: Double? = nil, clock: any WaitClock) throws {
            let input = try folder.folder("in")
            let settings = WatchSettings(settle: settle, poll: poll)
            tree = WatchTree(paths: [input], spec: InputSpec(), ignoredNames: settings.ignoredNames, ignoring: [])
            feed = WatchFeed(
                tree: tree, settings: settings, cancellation: cancellation, shard: nil,
                walker: InputWalker(paths: [], spec: InputSpec()), clock: clock, beforeRetake: {})
            watcher = FolderWatcher(
                feed: feed, settings: settings, notice: { _ in }, deferred: { [] }, leasePoll: 1)
        }

        /// Settled files are moved to the ready list now (as the watcher does between looks), and one taken.
        func tickAndTake() -> InputEntry? {
            feed.tick(deferred: [], leasePoll: 1)
            return feed.takeNow()
        }

        func stop() {
            cancellation.cancel(reason: "test over")
            watcher.join()
        }
    }

    /// Waits (real time) for the watcher thread to have handled the kernel's events so far: what it does with them
    /// is the kernel's pace, not the clock's. True once `done` holds; false after 20 s.
    static func eventually(_ done: () -> Bool) -> Bool {
        let limit = Date().addingTimeInterval(20)
        while !done() {
            if Date() > limit { return false }
            Thread.sleep(forTimeInterval: 0.01)  // the inotify thread, not a clock: nothing to drive
        }
        return true
    }

    func entry(_ watch: Watch, _ path: String) throws -> (InputEntry, FileStatus) {
        let status = try FileStatus(path: path, followLinks: true)
        let relative = String(path.dropFirst(watch.tree.roots[0].directory.count + 1))
        return (watch.tree.entry(watch.tree.roots[0], relative, status: status), status)
    }

    @Test func aFileIsTakenOnceTheClockHasMovedOnByTheSettleTime() throws {
        let folder = try TemporaryFolder("watch-clock-settle")
        defer { folder.remove() }
        let clock = ManualClock()
        let watch = try Watch(folder, settle: 2, clock: clock)
        let path = try folder.file("in/a.m4a", "recording")
        let (entry, status) = try entry(watch, path)
        watch.feed.note(entry, status: status, writer: .unknown)
        #expect(watch.tickAndTake() == nil)
        clock.advance(by: 1.9)
        #expect(watch.tickAndTake() == nil, "taken before its settle time")
        clock.advance(by: 0.1)
        #expect(watch.tickAndTake()?.path == path, "not taken once the clock moved on by the settle time")
    }

    @Test func aSetAsideFileIsDueAtItsTimeOnTheRunsClock() throws {
        let folder = try TemporaryFolder("watch-clock-due")
        defer { folder.remove() }
        let clock = ManualClock()
        let watch = try Watch(folder, settle: 2, clock: clock)
        let (entry, _) = try entry(watch, try folder.file("in/held.m4a", "recording"))
        // A call an earlier run cut short may be in flight for 30 s more (`Runner.takeDeferred`).
        watch.feed.tick(deferred: [(entry, clock.date.addingTimeInterval(30))], leasePoll: 1)
        clock.advance(by: 29)
        #expect(watch.tickAndTake() == nil, "handed out again before its time")
        clock.advance(by: 1)
        #expect(watch.tickAndTake()?.path == entry.path)
    }

    /// A recording written in chunks through one open descriptor, the clock moved on far past the settle time after
    /// each: the writer holding it open keeps it from being taken; once closed, it is taken whole.
    @Test func aFileItsWriterHoldsOpenIsNotTakenHoweverLongTheClockRuns() throws {
        let folder = try TemporaryFolder("watch-clock-open")
        defer { folder.remove() }
        let clock = ManualClock()
        let watch = try Watch(folder, settle: 2, clock: clock)
        watch.watcher.start()
        defer { watch.stop() }
        let path = folder.path + "/in/clip.mov"
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try #require(Self.eventually { watch.feed.sizes.pending == 1 }, "the watcher never saw the file made")
        let chunk = Data(repeating: 7, count: 64 * 1024)
        for index in 0..<6 {
            try handle.write(contentsOf: chunk)
            clock.advance(by: 10)
            #expect(watch.tickAndTake() == nil, "taken while its writer had written \(index + 1) of 6 chunks")
        }
        try handle.close()
        var taken: InputEntry?
        #expect(
            Self.eventually {
                clock.advance(by: 2)
                taken = watch.tickAndTake()
                return taken != nil
            }, "never taken once closed")
        #expect(taken?.file.size == Int64(6 * chunk.count), "taken before it was whole")
    }

    /// A copier writes `x.m4a.part`, closes it, and renames it once the settle time has long passed: the part is never
    /// taken (an ignored name), the renamed file is.
    @Test func copyThenRenameIsTakenAndThePartNever() throws {
        let folder = try TemporaryFolder("watch-clock-rename")
        defer { folder.remove() }
        let clock = ManualClock()
        let watch = try Watch(folder, settle: 2, clock: clock)
        watch.watcher.start()
        defer { watch.stop() }
        try folder.file("in/x.m4a.part", "recording")
        // The watcher handles events in order: once a file written after the part is taken, the part's events were
        // handled too.
        try folder.file("in/marker.m4a", "after")
        var first: InputEntry?
        try #require(
            Self.eventually {
                clock.advance(by: 2)
                first = watch.tickAndTake()
                return first != nil
            }, "the marker was never taken")
        #expect(first?.relativePath == "marker.m4a", "the part was taken")
        clock.advance(by: 10)
        #expect(watch.tickAndTake() == nil, "the part was taken")
        try FileManager.default.moveItem(atPath: folder.path + "/in/x.m4a.part", toPath: folder.path + "/in/x.m4a")
        var taken: InputEntry?
        #expect(
            Self.eventually {
                clock.advance(by: 2)
                taken = watch.tickAndTake()
                return taken != nil
            }, "the renamed file was never taken")
        #expect(taken?.relativePath == "x.m4a")
    }

    /// `--poll 30s`: the watcher scans only when the run's clock says the interval has passed, and the file it finds
    /// settles on the same clock; the test moves time on and waits for the watcher to go back to sleep.
    @Test func pollingScansWhenTheClockSaysTheIntervalHasPassed() throws {
        let folder = try TemporaryFolder("watch-clock-poll")
        defer { folder.remove() }
        let clock = DrivenClock()
        let watch = try Watch(folder, settle: 2, poll: 30, clock: clock)
        watch.watcher.start()
        defer { watch.stop() }
        try #require(clock.waitForSleep(after: 0), "the watcher never slept on the run's clock")
        /// Moves the clock on, and returns once the watcher has done what was due and sleeps again.
        func step(_ seconds: Double) -> Bool {
            let asleep = clock.sleepsBegun
            clock.advance(by: seconds)
            return clock.waitForSleep(after: asleep)
        }
        let path = try folder.file("in/new.m4a", "recording")
        #expect(step(29))
        #expect(watch.feed.sizes.pending == 0, "scanned before the interval had passed")
        #expect(step(1))
        #expect(watch.feed.sizes.pending == 1, "not found by the scan due at 30 s")
        #expect(watch.feed.takeNow() == nil)
        #expect(step(2))
        #expect(watch.feed.takeNow()?.path == path, "not taken once settled on the run's clock")
    }
}
