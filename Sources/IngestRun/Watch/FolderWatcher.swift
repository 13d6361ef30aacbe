import Foundation
import IngestCore
import Synchronization

/// The thread that learns of new and changed files and tells the feed: inotify events on every watched folder (a
/// folder that appears is watched and scanned at once; a queue overflow is followed by a rescan), or, with `--poll`
/// or once inotify runs out of watches, a scan of the folders at every interval. Between events it lets the feed
/// take the files that have settled.
final class FolderWatcher: Sendable {
    let feed: WatchFeed
    let tree: WatchTree
    let settings: WatchSettings
    /// Said to the user (on standard error): the fallback to polling, a watched folder gone or back.
    let notice: @Sendable (String) -> Void
    /// Told the watched folders missing now and why (empty: all there): what `/healthz` says.
    private let health: @Sendable ([String]) -> Void
    /// The runner's set-aside files, fed again once due.
    private let deferred: @Sendable () -> [(entry: InputEntry, until: Date?)]
    private let leasePoll: Double
    /// Signalled once the first watches are in place, and when the thread has ended.
    let ready = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)
    /// Rescans after an overflow so far (for tests and `-v`).
    let rescans = Atomic<Int>(0)

    init(
        feed: WatchFeed, settings: WatchSettings, notice: @escaping @Sendable (String) -> Void,
        health: @escaping @Sendable ([String]) -> Void = { _ in },
        deferred: @escaping @Sendable () -> [(entry: InputEntry, until: Date?)], leasePoll: Double
    ) {
        self.health = health
        self.feed = feed
        tree = feed.tree
        self.settings = settings
        self.notice = notice
        self.deferred = deferred
        self.leasePoll = leasePoll
    }

    /// Starts the thread and returns once the folders are watched, so the startup walk misses nothing written after.
    func start() {
        let thread = Thread { [self] in
            run()
            ended.signal()
        }
        thread.name = "ingest-watch"
        thread.start()
        ready.wait()
    }

    /// Waits for the thread to end (the feed was stopped or the run cancelled).
    func join() { ended.wait() }

    private func run() {
        let roots = WatchRoots(roots: tree.roots, notice: notice, health: health)
        let present = roots.start(now: feed.now())
        var pollInterval = settings.poll
        #if os(Linux)
            if pollInterval == nil {
                pollInterval = watchWithInotify(roots: roots, present: present)
            }
        #else
            pollInterval = pollInterval ?? WatchSettings.fallbackPoll
        #endif
        if let pollInterval { poll(every: pollInterval, roots: roots) }
    }

    /// The wall clock in nanoseconds, as file times are kept: the kernel's real clock, which stamps them (not the
    /// run's clock, which a test drives: `RealTime`).
    static func wallNow() -> Int64 { RealTime.fileTimeNow }

    /// Scans every folder at `interval` seconds: a file changed since the scan before (less a margin for timestamps
    /// behind the clock) goes to the table, and settles there. A root that is back, or leads to another folder, is
    /// scanned whole at once (its files may be older than the last scan: `rsync -a`, `cp -p`).
    func poll(every interval: Double, since start: Int64? = nil, roots: WatchRoots) {
        var since = start ?? FolderWatcher.wallNow()
        if start == nil { ready.signal() }
        var nextScan = feed.now() + interval
        while !feed.isStopped {
            for change in roots.check(now: feed.now()) {
                switch change {
                case .lost(let root, _): feed.removed(tree.path(root, ""), folder: true)
                case .found(let root):
                    tree.scan(root, "", depth: 0, folder: { _, _, _ in }, file: { feed.found($0, since: nil) })
                }
            }
            tickFeed()
            let wait = min(settings.tick, max(0, nextScan - feed.now()))
            if wait > 0 { feed.sleep(wait) }
            guard feed.now() >= nextScan, !feed.isStopped else { continue }
            let started = FolderWatcher.wallNow()
            scanAll(since: since - Int64(WatchFeed.recentWindow * 1e9), watch: nil)
            since = started
            nextScan = feed.now() + interval
        }
    }

    func tickFeed() { feed.tick(deferred: deferred(), leasePoll: leasePoll) }

    /// Walks every root: each folder is handed to `watch` (nil: none), each file found to the feed.
    func scanAll(since: Int64?, watch: ((String, WatchTree.Root, String, Int) -> Void)?) {
        for root in tree.roots {
            tree.scan(
                root, "", depth: 0, folder: { path, relative, depth in watch?(path, root, relative, depth) },
                file: { feed.found($0, since: since) })
        }
    }
}
