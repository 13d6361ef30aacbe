import Foundation
import IngestJournal
import IngestNative

/// Takes the walker's entries a batch at a time and asks a shared journal about the whole batch at once (their
/// records, and the leases of those not already done), so a worker's `lease` and `record` for each file are answered
/// from memory. The batch grows while files go fast (small files: up to 256, one request for all) and shrinks while
/// they go slowly, so a worker never holds more files than it will soon work on: others take the rest.
final class LeaseAhead: @unchecked Sendable {
    private let session: JournalSession
    private let source: () -> InputEntry?
    private let lock = NSLock()
    private var batch: [InputEntry] = []
    private var position = 0
    private var size: Int
    private let smallest: Int
    private var lastBatch: Date?
    static let largest = 256

    init(session: JournalSession, source: @escaping () -> InputEntry?, workers: Int) {
        self.session = session
        self.source = source
        smallest = max(1, min(workers, LeaseAhead.largest))
        size = smallest
    }

    func next() -> InputEntry? {
        lock.withLock {
            if position == batch.count {
                refill()
                if batch.isEmpty { return nil }
            }
            position += 1
            return batch[position - 1]
        }
    }

    private func refill() {
        let now = Date()
        if let lastBatch {
            // The last batch was used up quickly: take more at once; slowly: fewer.
            let seconds = now.timeIntervalSince(lastBatch)
            if seconds < 0.5 {
                size = min(size * 2, LeaseAhead.largest)
            } else if seconds > 2 {
                size = max(size / 2, smallest)
            }
        }
        lastBatch = now
        batch.removeAll(keepingCapacity: true)
        position = 0
        while batch.count < size, let entry = source() { batch.append(entry) }
        if !batch.isEmpty { session.leaseAhead(batch) }
    }
}

extension JournalSession {
    /// `next`, asking the journal about its entries a batch at a time when the journal is shared; else `next` itself.
    func leasingAhead(_ next: @escaping () -> InputEntry?, workers: Int) -> () -> InputEntry? {
        guard store.leasesAhead else { return next }
        let ahead = LeaseAhead(session: self, source: next, workers: workers)
        return { ahead.next() }
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
