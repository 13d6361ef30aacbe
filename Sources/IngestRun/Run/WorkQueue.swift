import Foundation

/// The hand-off between the walker, the workers and the caller. One lock; a wake-up goes only to a thread that is
/// waiting for what just changed (the caller for the report it needs next, a worker for room in the window). With
/// more threads than cores (the journal's writer is one more), waking every thread on every report made them fight
/// over the lock and cost more than the work itself.
final class WorkQueue: @unchecked Sendable {
    private let lock = NSLock()
    /// The caller waits here for the report of `nextToEmit`.
    private let reportReady = NSCondition()
    /// Workers wait here while the window is full.
    private let roomInWindow = NSCondition()
    private let next: () -> InputEntry?
    private let window: Int
    private var nextIndex = 0
    private var nextToEmit = 0
    private var walkerDone = false
    private var cancelled = false
    /// nil: the file was deferred (another worker holds it) and has no report in this pass.
    private var finished: [Int: ItemReport?] = [:]
    private var exitedWorkers = 0
    private var startedWorkers = 0
    private var callerWaiting = false
    private var workersWaiting = 0

    init(next: @escaping () -> InputEntry?, window: Int) {
        self.next = next
        self.window = window
    }

    /// The next entry for a worker, or nil when there is no more work. Waits while the window is full.
    func take() -> (Int, InputEntry)? {
        roomInWindow.lock()
        while true {
            lock.lock()
            let full = !cancelled && !walkerDone && nextIndex - nextToEmit >= window
            if full { workersWaiting += 1 }
            lock.unlock()
            guard full else { break }
            roomInWindow.wait()
        }
        roomInWindow.unlock()
        // The walker reads directories: under a lock of its own, so reports are not held up meanwhile.
        walking.lock()
        defer { walking.unlock() }
        lock.lock()
        let stop = cancelled || walkerDone
        lock.unlock()
        if !stop, let entry = next() {
            lock.lock()
            let index = nextIndex
            nextIndex += 1
            lock.unlock()
            return (index, entry)
        }
        lock.lock()
        walkerDone = true
        exitedWorkers += 1
        lock.unlock()
        wakeCaller(always: true)
        wakeWorkers()
        return nil
    }

    /// Held while the walker is asked for the next entry, so indices follow the walk's order.
    private let walking = NSLock()

    func finish(_ index: Int, report: ItemReport?) {
        lock.lock()
        finished[index] = report
        let wanted = index == nextToEmit
        lock.unlock()
        if wanted { wakeCaller(always: false) }
    }

    private func wakeCaller(always: Bool) {
        reportReady.lock()
        if always || callerWaiting { reportReady.signal() }
        reportReady.unlock()
    }

    /// The report of the oldest entry, once it is done; nil after the last one.
    func nextInOrder() -> ItemReport? {
        reportReady.lock()
        defer { reportReady.unlock() }
        while true {
            lock.lock()
            if let report = finished.removeValue(forKey: nextToEmit) {
                nextToEmit += 1
                let waking = workersWaiting > 0
                workersWaiting = 0
                lock.unlock()
                if waking { wakeWorkers() }
                if let report { return report }
                continue
            }
            let end = (walkerDone || cancelled) && nextToEmit >= nextIndex
            callerWaiting = !end
            lock.unlock()
            if end { return nil }
            reportReady.wait()
            callerWaiting = false
        }
    }

    private func wakeWorkers() {
        roomInWindow.lock()
        roomInWindow.broadcast()
        roomInWindow.unlock()
    }

    func cancel() {
        lock.lock()
        cancelled = true
        lock.unlock()
        wakeWorkers()
        wakeCaller(always: true)
    }

    /// Counted before the thread starts, and by a worker that has not exited yet: once every started worker has
    /// exited, none is left to start another.
    func workerStarted() {
        lock.lock()
        startedWorkers += 1
        lock.unlock()
    }

    func waitForWorkers() {
        roomInWindow.lock()
        defer { roomInWindow.unlock() }
        while true {
            lock.lock()
            let done = exitedWorkers >= startedWorkers
            lock.unlock()
            if done { return }
            roomInWindow.wait()
        }
    }
}
