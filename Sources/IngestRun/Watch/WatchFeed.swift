import Foundation
import IngestCore
import IngestFiles
import NativeSystem
import Synchronization

/// What `ingest watch` hands the runner's work queue: first the files already in the folders (the same lazy walk as
/// `run`), then each file once it has settled. The watcher thread tells it of events and scans; the workers take
/// entries (`next` waits for one, `takeNow` does not); the caller tells it of each finished file.
///
/// A file is never in the work queue twice at once: a change to a file in flight is noted and the file looked at
/// again once its report is in (the journal then says whether it is new content). The state is bounded by what is
/// landing or in flight now: files done are forgotten (the journal has them), but for a short while (`recentWindow`)
/// so that a scan looking back a little does not offer them again.
final class WatchFeed: Sendable {
    private struct State: ~Copyable {
        var table = SettleTable()
        /// Settled files, oldest first; `head` is the next to hand out.
        var ready: [InputEntry] = []
        var head = 0
        /// Files the runner set aside (another worker holds the lease, or a call may still be in flight), with the
        /// monotonic time they are due again. Still in flight.
        var again: [(entry: InputEntry, due: Double)] = []
        /// Taken and not reported yet, by path.
        var inFlight: [String: InputEntry] = [:]
        /// In flight, and changed since it was taken.
        var dirty: Set<String> = []
        /// The walk of what was in the folders at start; nil once done.
        var walker: InputWalker?
        /// Files finished lately, by path: their size, mtime and ctime then, and when (monotonic).
        var recent: [String: (size: Int64, modified: Int64, changed: Int64, at: Double)] = [:]
        var recentOrder: [(path: String, at: Double)] = []
        var stopped = false
        /// A file finished since `beforeRetake` last ran.
        var finishedSince = false
    }

    /// Seconds a finished file is remembered (a scan looks back this far, for timestamps a little behind the clock).
    static let recentWindow = 30.0

    private let state: Mutex<State>
    /// Wakes a worker waiting in `next` (a counting semaphore: a spare signal only costs one more look).
    private let wake = DispatchSemaphore(value: 0)
    let tree: WatchTree
    let settings: WatchSettings
    private let cancellation: RunCancellation
    private let shard: Shard?
    /// The run's clock: settle times, set-aside files' due times and the watcher's waits are measured on it.
    let clock: any WaitClock
    private let started: Double
    /// Makes what the journal was told of finished files visible to the next lookup (commits its batch): run before
    /// a file is handed out again once others have finished, so a file seen again is known as done.
    private let beforeRetake: @Sendable () -> Void

    init(
        tree: WatchTree, settings: WatchSettings, cancellation: RunCancellation, shard: Shard?,
        walker: sending InputWalker,
        clock: any WaitClock = SystemClock(), beforeRetake: @escaping @Sendable () -> Void
    ) {
        self.clock = clock
        started = clock.now
        self.beforeRetake = beforeRetake
        self.tree = tree
        self.settings = settings
        self.cancellation = cancellation
        self.shard = shard
        state = Mutex(State(walker: walker))
        cancellation.onCancel { [wake] in wake.signal() }
    }

    /// Seconds on the run's clock since the feed was made.
    func now() -> Double { clock.now - started }

    /// Waits `seconds` on the run's clock (the watcher thread between looks); false once the run is cancelled.
    @discardableResult
    func sleep(_ seconds: Double) -> Bool { clock.sleep(seconds, cancellation: cancellation) }

    var isStopped: Bool { cancellation.isCancelled || state.withLock { $0.stopped } }

    /// Ends `next` for good (the run stops: its report could not be written).
    func stop() {
        state.withLock { $0.stopped = true }
        wake.signal()
    }

    /// The next file to work on, waiting for one; nil once the run is cancelled or stopped.
    func next() -> InputEntry? {
        while !isStopped {
            if let entry = takeNow() { return entry }
            // A new file signals `wake`; the tick bounds a lost signal (`RealTime`).
            _ = wake.wait(timeout: RealTime.dispatchDeadline(in: settings.tick))
        }
        wake.signal()  // another worker may be waiting here too
        return nil
    }

    /// A file to work on now, if one is ready: set aside files due again first, then settled files, then the
    /// startup walk.
    func takeNow() -> InputEntry? {
        let now = now()
        let wallNow = FolderWatcher.wallNow()
        var commit = false
        let taken = state.withLock { state -> InputEntry? in
            if state.stopped || cancellation.isCancelled { return nil }
            commit = state.finishedSince && (!state.again.isEmpty || state.head < state.ready.count)
            if commit { state.finishedSince = false }
            if let index = state.again.firstIndex(where: { $0.due <= now }) {
                return state.again.remove(at: index).entry
            }
            while state.head < state.ready.count {
                let entry = state.ready[state.head]
                state.head += 1
                if state.head == state.ready.count {
                    state.ready.removeAll(keepingCapacity: state.ready.count < 1024)
                    state.head = 0
                }
                if state.inFlight[entry.path] != nil {
                    state.dirty.insert(entry.path)
                    continue
                }
                state.inFlight[entry.path] = entry
                return entry
            }
            return takeWalked(&state, now: now, wallNow: wallNow)
        }
        if commit { beforeRetake() }
        return taken
    }

    /// The startup walk's next file that is ready: one changed less than the settle time ago goes to the table
    /// instead (it may still be being written).
    private func takeWalked(_ state: inout State, now: Double, wallNow: Int64) -> InputEntry? {
        while let walker = state.walker {
            guard let entry = walker.next() else {
                state.walker = nil
                return nil
            }
            guard tree.takesWalked(entry.relativePath), shard?.contains(relativePath: entry.relativePath) ?? true,
                state.inFlight[entry.path] == nil, !state.table.contains(entry.path)
            else { continue }
            if let status = entry.status, entry.problem == nil,
                Double(wallNow - max(status.modified, status.statusChanged)) < settings.settle * 1e9
            {
                state.table.note(entry, status: status, writer: nil, now: now)
                continue
            }
            state.inFlight[entry.path] = entry
            return entry
        }
        return nil
    }

    /// An event said `entry` changed (`writer`: what it says of its writer; nil: nothing).
    func note(_ entry: InputEntry, status: FileStatus, writer: SettleTable.Writer?) {
        guard shard?.contains(relativePath: entry.relativePath) ?? true else { return }
        let now = now()
        state.withLock { state in
            if state.inFlight[entry.path] != nil {
                state.dirty.insert(entry.path)
            } else {
                state.table.note(entry, status: status, writer: writer, now: now)
            }
        }
    }

    /// A scan found `entry`. With `since` (nanoseconds since 1970), a file unchanged since then was seen before and
    /// is left alone, as is one in flight or finished lately with the same size and times.
    func found(_ entry: InputEntry, since: Int64?) {
        guard let status = entry.status, shard?.contains(relativePath: entry.relativePath) ?? true else { return }
        if let since, max(status.modified, status.statusChanged) < since { return }
        let now = now()
        state.withLock { state in
            if state.inFlight[entry.path] != nil || state.table.contains(entry.path) { return }
            if let done = state.recent[entry.path], done.size == status.size, done.modified == status.modified,
                done.changed == status.statusChanged
            {
                return
            }
            state.table.note(entry, status: status, writer: nil, now: now)
        }
    }

    /// The file (or every file under the folder) at `path` is gone: it is not waited for any more.
    func removed(_ path: String, folder: Bool) {
        state.withLock { state in
            if folder { state.table.remove(under: path) } else { state.table.remove(path) }
        }
    }

    /// Moves the files that have settled to the ready list, and the runner's set-aside files (`deferred`) to the
    /// files due again; forgets files finished more than `recentWindow` ago. Wakes a worker when there is work.
    func tick(deferred: [(entry: InputEntry, until: Date?)], leasePoll: Double) {
        let now = now()
        let date = clock.date
        let settle = settings.settle
        let woken = state.withLock { state -> Bool in
            let due = state.table.takeDue(now: now, settle: settle) { try? FileStatus(path: $0, followLinks: true) }
            state.ready.append(contentsOf: due)
            for (entry, until) in deferred {
                state.again.append((entry, now + (until.map { max(0, $0.timeIntervalSince(date)) } ?? leasePoll)))
            }
            var expired = 0
            while expired < state.recentOrder.count, now - state.recentOrder[expired].at > WatchFeed.recentWindow {
                let old = state.recentOrder[expired]
                if state.recent[old.path]?.at == old.at { state.recent[old.path] = nil }
                expired += 1
            }
            if expired > 0 { state.recentOrder.removeFirst(expired) }
            return !due.isEmpty || state.again.contains { $0.due <= now }
        }
        if woken { wake.signal() }
    }

    /// The runner is done with the file of `report`: no longer in flight; a change seen meanwhile puts it back in
    /// the table (the journal will tell new content from the same).
    func finished(_ report: ItemReport) {
        let status = try? FileStatus(path: report.path, followLinks: true)
        let now = now()
        state.withLock { state in
            guard let entry = state.inFlight.removeValue(forKey: report.path) else { return }
            state.finishedSince = true
            if let status {
                state.recent[report.path] = (status.size, status.modified, status.statusChanged, now)
                state.recentOrder.append((report.path, now))
            }
            guard state.dirty.remove(report.path) != nil, let status, status.kind == .regular else { return }
            var noted = entry
            noted.file = entry.file.relisted(status)
            state.table.note(noted, status: status, writer: nil, now: now)
        }
    }

    /// Files waiting to settle, ready, in flight and remembered: what the soak test watches stay flat.
    var sizes: (pending: Int, ready: Int, inFlight: Int, recent: Int) {
        state.withLock { ($0.table.count, $0.ready.count - $0.head, $0.inFlight.count, $0.recent.count) }
    }
}
