import Foundation
import IngestCore
import IngestJournal
import NativeSystem
import Synchronization

/// Takes the walker's entries a batch at a time and asks a shared journal about the whole batch at once (their
/// records, and the leases of those not already done), so a worker's `lease` and `record` for each file are answered
/// from memory. The batch grows while files go fast (small files: up to 256, one request for all) and shrinks while
/// they go slowly, so a worker never holds more files than it will soon work on: others take the rest.
final class LeaseAhead: Sendable {
    private let session: JournalSession
    /// The run's clock: how fast a batch was used up is measured on it.
    private let clock: any WaitClock
    private struct State {
        var batch: [InputEntry] = []
        var position = 0
        var size: Int
        var lastBatch: Double?
    }
    private let state: Mutex<State>
    private let smallest: Int
    static let largest = 256

    init(session: JournalSession, workers: Int, clock: any WaitClock) {
        self.session = session
        self.clock = clock
        smallest = max(1, min(workers, LeaseAhead.largest))
        state = Mutex(State(size: smallest))
    }

    /// The next entry, from the batch in hand or from a new batch taken from `source` (the walker, asked under the
    /// lock, so entries keep the walk's order). `ready`, when `source` blocks for new files (`watch`), gives only
    /// entries available now, for a batch past its first entry, so a batch never waits to fill.
    func next(from source: () -> InputEntry?, ready: (() -> InputEntry?)? = nil) -> InputEntry? {
        state.withLock { state in
            if state.position == state.batch.count {
                refill(&state, from: source, ready: ready)
                if state.batch.isEmpty { return nil }
            }
            state.position += 1
            return state.batch[state.position - 1]
        }
    }

    private func refill(_ state: inout State, from source: () -> InputEntry?, ready: (() -> InputEntry?)?) {
        let now = clock.now
        if let lastBatch = state.lastBatch {
            // The last batch was used up quickly: take more at once; slowly: fewer.
            let seconds = now - lastBatch
            if seconds < 0.5 {
                state.size = min(state.size * 2, LeaseAhead.largest)
            } else if seconds > 2 {
                state.size = max(state.size / 2, smallest)
            }
        }
        state.lastBatch = now
        state.batch.removeAll(keepingCapacity: true)
        state.position = 0
        if let first = source() { state.batch.append(first) }
        // Past the first entry, a blocking source (`watch`) is asked only for what is ready now.
        func more() -> InputEntry? { if let ready { ready() } else { source() } }
        while !state.batch.isEmpty, state.batch.count < state.size, let entry = more() { state.batch.append(entry) }
        if !state.batch.isEmpty { session.leaseAhead(state.batch) }
    }
}

extension JournalSession {
    /// `next`, asking the journal about its entries a batch at a time when the journal is shared; else `next` itself.
    func leasingAhead(
        _ next: sending @escaping () -> InputEntry?, ready: sending (() -> InputEntry?)? = nil, workers: Int,
        clock: any WaitClock
    ) -> sending () -> InputEntry? {
        guard store.leasesAhead else { return next }
        let ahead = LeaseAhead(session: self, workers: workers, clock: clock)
        return { ahead.next(from: next, ready: ready) }
    }

    /// Asks the journal about `entries` at once. A file it has as done, with this content (the walker's size, mtime
    /// and inode) and pipeline, is skipped without a lease, as `prepare` will skip it; every other file is leased.
    /// On failure nothing is kept, and each file is leased alone as its worker comes to it.
    func leaseAhead(_ entries: [InputEntry]) {
        var statuses: [JournalFileKey: FileStatus] = [:]
        var files: [JournalFileKey] = []
        for entry in entries where entry.problem == nil && entry.skipReason == nil {
            let file = JournalFileKey(root: root(of: entry.root).canonical, relativePath: entry.relativePath)
            files.append(file)
            statuses[file] = entry.status
        }
        try? store.leaseAhead(files) { file, record in
            guard let record, let status = statuses[file] else { return true }
            return !isDone(record, status: status)
        }
    }
}
