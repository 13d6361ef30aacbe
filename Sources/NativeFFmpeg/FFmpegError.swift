internal import CFFmpeg
internal import CFFmpegShims

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An FFmpeg return code: an open set (FFmpeg grows new ones and wraps every POSIX errno), so a struct with
/// named statics in the style of swift-system's `Errno`, not an enum that could never be exhaustive.
package struct FFmpegErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    package var rawValue: Int32
    package init(rawValue: Int32) { self.rawValue = rawValue }

    /// `AVERROR(errno)`: FFmpeg's negated form of a POSIX error.
    package init(posix errno: Int32) { self.rawValue = ingest_averror(errno) }

    /// `AVERROR_EOF`: the end of the input; a normal outcome when reading, not a failure.
    package static var endOfFile: Self { Self(rawValue: ingest_averror_eof()) }
    /// `AVERROR(EAGAIN)`: output is not available in this state; feed more input and try again.
    package static var tryAgain: Self { Self(posix: EAGAIN) }
    /// `AVERROR_INVALIDDATA`: the bytes are not what the demuxer or decoder expects (corrupt or truncated).
    package static var invalidData: Self { Self(rawValue: ingest_averror_invaliddata()) }
    /// `AVERROR_EXIT`: an interrupt callback asked FFmpeg to stop (our probe deadline).
    package static var exit: Self { Self(rawValue: ingest_averror_exit()) }
    /// `AVERROR_DECODER_NOT_FOUND`.
    package static var decoderNotFound: Self { Self(rawValue: ingest_averror_decoder_not_found()) }
    /// `AVERROR(EPERM)`: what the probe guard answers to a refused nested open.
    package static var notPermitted: Self { Self(posix: EPERM) }
    /// `AVERROR(EACCES)`.
    package static var permissionDenied: Self { Self(posix: EACCES) }
    /// `AVERROR(ENOENT)`.
    package static var noSuchFile: Self { Self(posix: ENOENT) }
    /// `AVERROR(EIO)`.
    package static var ioError: Self { Self(posix: EIO) }
    /// `AVERROR(ENOMEM)`.
    package static var outOfMemory: Self { Self(posix: ENOMEM) }

    /// FFmpeg's own text for the code (`av_strerror`), e.g. "Invalid data found when processing input".
    package var description: String {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 256) { buffer in
            guard let base = buffer.baseAddress else { return "FFmpeg error \(rawValue)" }
            ingest_av_strerror(rawValue, base, buffer.count)
            return String(cString: base)
        }
    }
}

/// A failed FFmpeg call: which function failed, the code, and FFmpeg's own text for it — kept verbatim so a
/// report shows what FFmpeg said (FoundationNetworking's habit of dropping the C library's text is what we avoid).
package struct FFmpegError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The C function that failed (`avformat_open_input`).
    package var call: String
    package var code: FFmpegErrorCode
    /// FFmpeg's text for `code`, captured when the error was made.
    package var message: String

    package init(call: String, code: FFmpegErrorCode) {
        self.call = call
        self.code = code
        self.message = code.description
    }

    package init(call: String, code: FFmpegErrorCode, message: String) {
        self.call = call
        self.code = code
        self.message = message
    }

    package var description: String { "\(call): \(message)" }
}

/// Runs an FFmpeg call that returns a negative `AVERROR` on failure; throws `FFmpegError` naming `call`
/// and returns the (non-negative) result otherwise. The one place that turns FFmpeg's convention into `throw`,
/// like swift-nio's `syscall` helper.
@discardableResult
package func ffmpegCall(_ call: String, _ body: () throws -> Int32) throws -> Int32 {
    let result = try body()
    if result < 0 { throw FFmpegError(call: call, code: FFmpegErrorCode(rawValue: result)) }
    return result
}
