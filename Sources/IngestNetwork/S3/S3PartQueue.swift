import Foundation
import NativeCurl
import Synchronization

/// What the threads sending one multipart upload's parts share: the queue of parts, and the bytes sent for progress.
extension S3Uploader {
    /// The parts of one multipart upload, handed out in order to the threads that send them; keeps each part's
    /// result and the first failure (after which no part is handed out).
    final class PartQueue: Sendable {
        private struct Parts {
            var nextIndex = 0
            var stored: [(etag: String, checksum: String?)?]
            var firstFailure: Error?
        }
        private let parts: Mutex<Parts>
        private let count: Int

        init(count: Int) {
            self.count = count
            parts = Mutex(Parts(stored: Array(repeating: nil, count: count)))
        }

        func next() -> Int? {
            let count = count
            return parts.withLock { parts in
                guard parts.firstFailure == nil, parts.nextIndex < count else { return nil }
                defer { parts.nextIndex += 1 }
                return parts.nextIndex
            }
        }

        func store(_ index: Int, _ result: (etag: String, checksum: String?)) {
            parts.withLock { $0.stored[index] = result }
        }

        func fail(_ error: Error) { parts.withLock { if $0.firstFailure == nil { $0.firstFailure = error } } }

        var failure: Error? { parts.withLock { $0.firstFailure } }
        /// Every part's result, in part order (call once all parts are stored).
        var results: [(etag: String, checksum: String?)] { parts.withLock { $0.stored.compactMap { $0 } } }
    }

    /// Bytes sent of a multipart upload, the parts in flight together: what the progress display shows.
    final class SentBytes: Sendable {
        private struct Sent {
            var perPart: [Int: Int64] = [:]
            var total: Int64 = 0
        }
        private let sent = Mutex(Sent())

        func set(_ part: Int, _ bytes: Int64, report: (Int64) -> Void) {
            let now = sent.withLock { sent -> Int64 in
                sent.total += bytes - (sent.perPart[part] ?? 0)
                sent.perPart[part] = bytes
                return sent.total
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
