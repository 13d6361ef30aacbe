import Foundation
import Synchronization

/// The hand-off between the walker, the workers and the caller. One lock on the state; a wake-up goes only to a thread that is
/// waiting for what just changed (the caller for the report it needs next, a worker for room in the window). With
/// more threads than cores (the journal's writer is one more), waking every thread on every report made them fight
/// over the lock and cost more than the work itself.
final class WorkQueue: Sendable {
    /// The walker's closure, held in a struct: a closure held in the Mutex directly was wrapped in one more
    /// reabstraction thunk at every `withLock` (in a debug build), so each `take()` made every later call deeper
    /// and a run over ~10,000 files overflowed a worker's stack.
    private struct Walk {
        let next: () -> InputEntry?
    }
    private struct State {
        var nextIndex = 0
        var nextToEmit = 0
        var walkerDone = false
        var cancelled = false
        /// nil: the file was deferred (another worker holds it) and has no report in this pass.
        var finished: [Int: ItemReport?] = [:]
        var exitedWorkers = 0
        var startedWorkers = 0
        var callerWaiting = false
        var workersWaiting = 0
    }
    private let state = Mutex(State())
    /// The caller blocks here for the report of `nextToEmit` (it must hand reports back in order, on its thread).
    /// The conditions only carry wake-ups: whoever waits re-reads `state` while holding the condition, and whoever
    /// changes what it waits for takes the condition before signalling, so no wake-up is lost.
    private let reportReady = NSCondition()
    /// Workers (threads of their own, see `Runner`) block here while the window is full.
    private let roomInWindow = NSCondition()
    /// The walker, asked for the next entry under its lock, so indices follow the walk's order and directories are
    /// read without holding `state` (reports are not held up meanwhile).
    private let walking: Mutex<Walk>
    private let window: Int

    init(next: sending @escaping () -> InputEntry?, window: Int) {
        self.walking = Mutex(Walk(next: next))
        self.window = window
    }

    /// The next entry for a worker, or nil when there is no more work. Waits while the window is full.
    func take() -> (Int, InputEntry)? {
        let window = window
        roomInWindow.lock()
        while true {
            let full = state.withLock { state in
                let full = !state.cancelled && !state.walkerDone && state.nextIndex - state.nextToEmit >= window
                if full { state.workersWaiting += 1 }
                return full
            }
            guard full else { break }
            roomInWindow.wait()
        }
        roomInWindow.unlock()
        let taken: (Int, InputEntry)? = walking.withLock { walk in
            let stop = state.withLock { $0.cancelled || $0.walkerDone }
            guard !stop, let entry = walk.next() else { return nil }
            let index = state.withLock { state in
                defer { state.nextIndex += 1 }
                return state.nextIndex
            }
            return (index, entry)
        }
        if let taken { return taken }
        state.withLock { state in
            state.walkerDone = true
            state.exitedWorkers += 1
        }
        wakeCaller(always: true)
        wakeWorkers()
        return nil
    }

    func finish(_ index: Int, report: ItemReport?) {
        let wanted = state.withLock { state in
            state.finished[index] = report
            return index == state.nextToEmit
        }
        if wanted { wakeCaller(always: false) }
    }

    private func wakeCaller(always: Bool) {
        reportReady.lock()
        if always || state.withLock({ $0.callerWaiting }) { reportReady.signal() }
        reportReady.unlock()
    }

    /// The report of the oldest entry, once it is done; nil after the last one.
    func nextInOrder() -> ItemReport? {
        reportReady.lock()
        defer { reportReady.unlock() }
        while true {
            enum Step {
                case report(ItemReport?, wakeWorkers: Bool)
                case end
                case wait
            }
            let step = state.withLock { state -> Step in
                if let report = state.finished.removeValue(forKey: state.nextToEmit) {
                    state.nextToEmit += 1
                    defer { state.workersWaiting = 0 }
                    return .report(report, wakeWorkers: state.workersWaiting > 0)
                }
                let end = (state.walkerDone || state.cancelled) && state.nextToEmit >= state.nextIndex
                state.callerWaiting = !end
                return end ? .end : .wait
            }
            switch step {
            case .report(let report, let waking):
                if waking { wakeWorkers() }
                if let report { return report }
            case .end: return nil
            case .wait:
                reportReady.wait()
                state.withLock { $0.callerWaiting = false }
            }
        }
    }

    private func wakeWorkers() {
        roomInWindow.lock()
        roomInWindow.broadcast()
        roomInWindow.unlock()
    }

    func cancel() {
        state.withLock { $0.cancelled = true }
        wakeWorkers()
        wakeCaller(always: true)
    }

    /// Counted before the thread starts, and by a worker that has not exited yet: once every started worker has
    /// exited, none is left to start another.
    func workerStarted() { state.withLock { $0.startedWorkers += 1 } }

    func waitForWorkers() {
        roomInWindow.lock()
        defer { roomInWindow.unlock() }
        while !state.withLock({ $0.exitedWorkers >= $0.startedWorkers }) { roomInWindow.wait() }
    }
}
