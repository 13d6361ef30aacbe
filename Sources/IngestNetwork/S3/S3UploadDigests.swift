import Crypto
import Foundation
import IngestCore
import IngestFiles
import NativeCurl
import NativeSystem
import NativeZlib

/// The digests of an `s3` upload, each computed in the one pass that reads the bytes to hash them (issue 13): a part's
/// signing SHA-256 and Content-MD5 and the journal's SHA-256 of the whole file (fed by the parts in order) share a
/// read; a single PUT's SHA-256 and ETag MD5 likewise, or ride along while it is sent when nothing is signed.
extension S3Uploader {
    struct SliceDigest {
        var sha256: String
        var sha256Base64: String
        var md5: [UInt8]
        var md5Base64: String { Data(md5).base64EncodedString() }
        /// The CRC asked for (`crc:`), and the slice's XXH3 identity (`identity:`).
        var crc: CRC? = nil
        var identity: String? = nil
    }

    /// SHA-256 (when `sha256`) and MD5 (when `md5`) of a file slice in one read of 64 KiB chunks (each chunk is
    /// hashed while it is in the core's cache), every chunk also handed to `feed` (the whole file's hash); fails
    /// when the file no longer has the size and mtime the slice was taken with.
    func hashSlice(
        _ slice: HTTPBody.FileSlice, sha256 includeSHA256: Bool = true, md5 includeMD5: Bool = false,
        crc: CRCKind? = nil, identity: Bool = false, feed: ((UnsafeRawBufferPointer) -> Void)? = nil
    ) throws -> SliceDigest {
        var digest = StreamDigest(sha256: includeSHA256, md5: includeMD5, identity: identity, crc: crc)
        let result: (read: Int64, status: FileStatus?)
        do {
            result = try readFileSlice(
                path: slice.path, offset: slice.offset, length: slice.size, chunkSize: Self.hashChunk
            ) { bytes in
                if let cancellation, cancellation.isCancelled {
                    throw ItemFailed.interrupted(
                        stage: stage, reason: cancellation.reason, during: "hashing \(slice.path)")
                }
                digest.update(bytes)
                feed?(bytes)
            }
        } catch let error as SystemError {
            throw ItemFailed(stage: stage, rule: .unreadable, message: "cannot read \(slice.path): \(error)")
        }
        if result.read < slice.size {
            throw ItemFailed(stage: stage, rule: .changed, message: "the file shrank while it was being uploaded")
        }
        if let now = result.status, let change = Self.change(of: now, since: slice) {
            throw ItemFailed(
                stage: stage, rule: .changed, message: "the file changed while it was being uploaded (\(change))")
        }
        let digests = digest.finalize()
        return SliceDigest(
            sha256: includeSHA256 ? digests.sha256Hex : "",
            sha256Base64: includeSHA256 ? Data(digests.sha256).base64EncodedString() : "", md5: digests.md5,
            crc: digests.crc, identity: digests.identity)
    }

    /// What moved since `slice` was taken: its pinned identity when it has one, else its size and mtime.
    static func change(of now: FileStatus, since slice: HTTPBody.FileSlice) -> String? {
        if let identity = slice.identity { return now.change(since: identity) }
        let size = slice.fileSize ?? slice.offset + slice.size
        if now.size != size { return "size \(size) → \(now.size) bytes" }
        return now.modified != slice.modified ? "modification time changed" : nil
    }

    /// The read size of the hashing pass: small enough that SHA-256 and MD5 find the chunk in L2 after `pread`.
    static let hashChunk = 64 * 1024
}

/// The whole file's journal identity (XXH3-128, `identity: true`; SHA-256 otherwise), fed by the hashing pass of
/// a multipart upload's parts: each part's
/// thread waits until the parts before it have been fed, then hashes its own part and feeds the file's hash in the
/// same read. A part that fails before its turn gives the hash up (`giveUp`) so no thread waits forever; the
/// upload has failed then anyway.
final class PartOrderedSHA256: Sendable {
    private struct Turns {
        var next = 0
        var givenUp = false
        var digest: StreamDigest
    }
    /// A part's thread blocks until the parts before it have been fed (the hash takes the bytes in file order).
    private let turns: ConditionLock<Turns>
    private let count: Int

    init(parts: Int, identity: Bool = false) {
        count = parts
        turns = ConditionLock(Turns(digest: StreamDigest(sha256: !identity, identity: identity)))
    }

    /// Runs `hash` for part `index` once parts 0..<index have been fed, handing it the feed of the file's hash
    /// (nil once the hash is given up). The digest is taken out while its part feeds it and put back after.
    func inTurn<T>(_ index: Int, _ hash: (((UnsafeRawBufferPointer) -> Void)?) throws -> T) throws -> T {
        var digest = turns.wait(until: { $0.next == index || $0.givenUp }) { $0.givenUp ? nil : $0.digest }
        do {
            let result = try hash(digest == nil ? nil : { digest?.update($0) })
            turns.change { turns in
                guard let digest else { return }
                turns.digest = digest
                turns.next += 1
            }
            return result
        } catch {
            giveUp()
            throw error
        }
    }

    func giveUp() { turns.change { $0.givenUp = true } }

    /// The hex digest once every part has been fed; nil when it was given up.
    var sha256Hex: String? { finished?.sha256Hex }

    /// The journal's identity (`xxh3-128:…`) once every part has been fed; nil when given up or not asked for.
    var identity: String? { finished?.identity }

    private var finished: StreamDigest.Result? {
        let count = count
        return turns.withLock { turns in
            guard !turns.givenUp, turns.next == count else { return nil }
            return turns.digest.finalize()
        }
    }
}
