import Foundation
import IngestCore
import NativeSystem

/// Hashes bytes as they stream past (to a server or from disk); restarts when an upload rewinds.
///
/// `.inline` hashes on the thread that hands the bytes over (a local read or copy). `.background` is for uploads:
/// curl's one thread moves every transfer, so hashing there would cap them all; it only copies each chunk into one
/// of `slotCount` reusable buffers and a serial queue per observer hashes them in order. When every buffer is
/// taken the sender waits for one (back-pressure: memory stays at `slotCount` chunks however big the file).
/// `.countOnly` hashes nothing (no journal records the hash and no template reads it during the upload; a later
/// `{{sha256}}` still reads the file on demand).
// unchecked: swift-crypto's hash state (not Sendable) is touched by one thread at a time, the sender or its queue
package final class DigestObserver: ByteStreamObserver, @unchecked Sendable {
    package enum Mode: Sendable { case inline, background, countOnly }

    let mode: Mode
    private let includeSHA256: Bool
    private let includeMD5: Bool
    private let includeIdentity: Bool
    // Hash state: touched only by the sender's thread (`.inline`) or only on `queue` (`.background`).
    private var digest: StreamDigest
    private var finalized: StreamDigest.Result?
    /// Bytes handed over since the last restart, on the sender's thread (what `progress` is told).
    private var sent: Int64 = 0
    /// Told the bytes done so far (the live progress display); called on the thread that reads the file.
    package var progress: (@Sendable (Int64) -> Void)?

    static let slotCount = 4
    private let queue: DispatchQueue?
    private let freeSlots = DispatchSemaphore(value: DigestObserver.slotCount)
    private let slotLock = NSLock()
    /// Buffers not holding a chunk right now (arrays keep their capacity, so they are reused, not reallocated).
    private var idle: [[UInt8]] = []

    /// `sha256: false` is for a single S3 PUT without a journal: only the MD5 its ETag is checked against.
    /// `identity` adds the journal's XXH3-128 (`ContentIdentity`): cheap enough to take `.inline` on curl's thread.
    package init(sha256: Bool = true, md5: Bool = false, identity: Bool = false, mode: Mode = .inline) {
        includeSHA256 = sha256
        includeMD5 = md5
        includeIdentity = identity
        digest = StreamDigest(sha256: sha256, md5: md5, identity: identity)
        self.mode = mode
        queue = mode == .background ? DispatchQueue(label: "ingest-digest") : nil
    }

    package func restart() {
        sent = 0
        switch mode {
        case .inline: resetHash()
        case .background: queue!.async { self.resetHash() }
        case .countOnly: break
        }
    }

    package func consume(_ bytes: UnsafeRawBufferPointer) {
        switch mode {
        case .inline: hash(bytes)
        case .background: hashInBackground(bytes)
        case .countOnly: break
        }
        sent += Int64(bytes.count)
        progress?(sent)
    }

    private func resetHash() {
        digest = StreamDigest(sha256: includeSHA256, md5: includeMD5, identity: includeIdentity)
        finalized = nil
    }

    private func hash(_ bytes: UnsafeRawBufferPointer) { digest.update(bytes) }

    private func hashInBackground(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        freeSlots.wait()
        slotLock.lock()
        var buffer = idle.popLast() ?? []
        slotLock.unlock()
        buffer.removeAll(keepingCapacity: true)
        buffer.append(contentsOf: bytes)
        queue!.async { [buffer] in
            buffer.withUnsafeBytes { self.hash($0) }
            self.slotLock.lock()
            self.idle.append(buffer)
            self.slotLock.unlock()
            self.freeSlots.signal()
        }
    }

    /// Waits for the chunks still queued (background mode) so the hash state is complete.
    private func drain() { queue?.sync {} }

    /// Bytes hashed since the last restart (bytes handed over when hashing nothing).
    package var count: Int64 {
        if mode == .countOnly { return sent }
        drain()
        return digest.count
    }

    /// The digests of the bytes since the last restart (background mode: once every queued chunk is hashed).
    package func finish() -> StreamDigest.Result {
        drain()
        if let finalized { return finalized }
        let result = digest.finalize()
        finalized = result
        return result
    }

    var sha256Hex: String { finish().sha256Hex }
    var md5Hex: String? { includeMD5 ? finish().md5Hex : nil }

    /// The journal's identity of the bytes since the last restart (nil unless asked for).
    package var identity: String? { includeIdentity ? finish().identity : nil }

    package func store(on item: Item) {
        if mode == .countOnly { return }
        // Streaming the original file identified it for the journal.
        if let identity, item.artifact == item.path { item.knownIdentity = identity }
        if !includeSHA256 { return }
        item.templateValues["sha256"] = .string(sha256Hex)
        // Streaming the original file hashed it for the journal too.
        if item.artifact == item.path { item.knownSHA256 = sha256Hex }
        if let md5Hex { item.templateValues["md5"] = .string(md5Hex) }
    }
}
