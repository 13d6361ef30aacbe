internal import CFFmpeg
internal import CFFmpegShims

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A read-only, seekable `AVIOContext` over bytes in memory (`avio_alloc_context` with read and seek callbacks),
/// so a demuxer can read media that is not a file: the fuzzer probes its inputs through it. `deinit` frees the
/// context and its buffer (`avio_context_free`, `av_freep`); the bytes live as long as this object.
package final class MemoryIO {
    /// The bytes and the read position the callbacks share; passed to FFmpeg as the opaque pointer.
    private final class Cursor {
        let bytes: [UInt8]
        var position = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }
    }

    let context: UnsafeMutablePointer<AVIOContext>
    private let cursor: Cursor

    package init(bytes: [UInt8], bufferSize: Int = 4096) throws {
        cursor = Cursor(bytes)
        guard let buffer = av_malloc(bufferSize)?.assumingMemoryBound(to: UInt8.self) else {
            throw FFmpegError(call: "av_malloc", code: .outOfMemory)
        }
        let opaque = Unmanaged.passUnretained(cursor).toOpaque()
        guard
            let context = avio_alloc_context(
                buffer, Int32(bufferSize), 0, opaque, MemoryIO.read, nil, MemoryIO.seek)
        else {
            av_free(buffer)
            throw FFmpegError(call: "avio_alloc_context", code: .outOfMemory)
        }
        self.context = context
    }

    deinit {
        // FFmpeg may have replaced the buffer it was given; free the one it holds now.
        av_freep(&context.pointee.buffer)
        var local: UnsafeMutablePointer<AVIOContext>? = context
        avio_context_free(&local)
    }

    private static let read: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?, Int32) -> Int32 =
        { opaque, buffer, size in
            guard let opaque, let buffer, size > 0 else { return ingest_averror_eof() }
            let cursor = Unmanaged<Cursor>.fromOpaque(opaque).takeUnretainedValue()
            let count = min(Int(size), cursor.bytes.count - cursor.position)
            guard count > 0 else { return ingest_averror_eof() }
            cursor.bytes.withUnsafeBufferPointer { bytes in
                buffer.update(from: bytes.baseAddress! + cursor.position, count: count)
            }
            cursor.position += count
            return Int32(count)
        }

    private static let seek: @convention(c) (UnsafeMutableRawPointer?, Int64, Int32) -> Int64 = {
        opaque, offset, whence in
        guard let opaque else { return -1 }
        let cursor = Unmanaged<Cursor>.fromOpaque(opaque).takeUnretainedValue()
        let size = Int64(cursor.bytes.count)
        let target: Int64
        switch whence & ~Int32(AVSEEK_FORCE) {
        case Int32(AVSEEK_SIZE): return size
        case SEEK_SET: target = offset
        case SEEK_CUR: target = Int64(cursor.position).addingReportingOverflow(offset).partialValue
        case SEEK_END: target = size.addingReportingOverflow(offset).partialValue
        default: return -1
        }
        guard target >= 0, target <= size else { return -1 }
        cursor.position = Int(target)
        return target
    }
}
