import CXXHash
import NativeSystem

/// Streaming XXH3-128 (libxxhash): the journal's identity of a file's content. Not cryptographic — it only has to
/// tell a touched or copied file from a changed one, as rsync 3.2's whole-file checksum does — and it runs at memory
/// speed, so it can ride along on the thread that reads the bytes to send them without slowing the transfer.
/// Not thread-safe: one owner feeds it (an observer on curl's thread, or a queue).
package final class XXH3Hasher {
    private let state: OpaquePointer

    /// Throws when libxxhash cannot allocate its state (out of memory).
    package init() throws(SystemError) {
        guard let state = XXH3_createState() else {
            throw SystemError(call: "XXH3_createState", path: "", errno: 12)
        }
        self.state = state
        XXH3_128bits_reset(state)
    }

    deinit { XXH3_freeState(state) }

    package func reset() { XXH3_128bits_reset(state) }

    package func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        XXH3_128bits_update(state, base, bytes.count)
    }

    /// The digest in canonical (big-endian) order: 16 bytes, printed as hex it is what `xxhsum -H2` prints.
    package func digest() -> [UInt8] {
        var canonical = XXH128_canonical_t()
        XXH128_canonicalFromHash(&canonical, XXH3_128bits_digest(state))
        return withUnsafeBytes(of: &canonical.digest) { Array($0) }
    }

    /// XXH3-128 of one buffer.
    package static func digest(of bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var canonical = XXH128_canonical_t()
        XXH128_canonicalFromHash(&canonical, XXH3_128bits(bytes.baseAddress, bytes.count))
        return withUnsafeBytes(of: &canonical.digest) { Array($0) }
    }
}
