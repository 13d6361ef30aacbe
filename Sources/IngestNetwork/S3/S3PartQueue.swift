import Foundation
import IngestNative

/// What the threads sending one multipart upload's parts share: the queue of parts, and the bytes sent for progress.
extension S3Uploader {
    /// The parts of one multipart upload, handed out in order to the threads that send them; keeps each part's
    /// result and the first failure (after which no part is handed out).
    final class PartQueue: @unchecked Sendable {
        private let lock = NSLock()
        private var nextIndex = 0
        private let count: Int
        private var stored: [(etag: String, checksum: String?)?]
        private var firstFailure: Error?

        init(count: Int) {
            self.count = count
            stored = Array(repeating: nil, count: count)
        }

        func next() -> Int? {
            lock.withLock {
                guard firstFailure == nil, nextIndex < count else { return nil }
                defer { nextIndex += 1 }
                return nextIndex
            }
        }

        func store(_ index: Int, _ result: (etag: String, checksum: String?)) {
            lock.withLock { stored[index] = result }
        }

        func fail(_ error: Error) { lock.withLock { if firstFailure == nil { firstFailure = error } } }

        var failure: Error? { lock.withLock { firstFailure } }
        /// Every part's result, in part order (call once all parts are stored).
        var results: [(etag: String, checksum: String?)] { lock.withLock { stored.compactMap { $0 } } }
    }

    /// Bytes sent of a multipart upload, the parts in flight together: what the progress display shows.
    final class SentBytes: @unchecked Sendable {
        private let lock = NSLock()
        private var perPart: [Int: Int64] = [:]
        private var total: Int64 = 0

        func set(_ part: Int, _ bytes: Int64, report: (Int64) -> Void) {
            let now = lock.withLock { () -> Int64 in
                total += bytes - (perPart[part] ?? 0)
                perPart[part] = bytes
                return total
            }
            report(now)
        }
    }

    /// Reports the bytes of one part sent so far (restarting with a retried part).
    final class ProgressObserver: HTTPBodyObserver {
        let report: (Int64) -> Void
        var count: Int64 = 0
        init(_ report: @escaping (Int64) -> Void) { self.report = report }
        func restart() { count = 0 }
        func consume(_ bytes: UnsafeRawBufferPointer) {
            count += Int64(bytes.count)
            report(count)
        }
    }
}
