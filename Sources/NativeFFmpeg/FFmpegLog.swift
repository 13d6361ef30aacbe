internal import CFFmpeg
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Collects FFmpeg's error log lines ("moov atom not found") while one call runs on the current thread.
///
/// An `AVERROR` alone says only "Invalid data found when processing input"; the demuxer's reason goes to
/// `av_log`. FFmpeg's log callback is process-wide, so one callback is installed once and routes each line to
/// the capture active on the calling thread (a pthread key); with no capture active it behaves as FFmpeg's
/// default callback, so other users of FFmpeg in the process see no change. Probing decoders run with
/// `threads=1` (libavformat forces it), so the lines of one probe arrive on the thread that called it.
package enum FFmpegLog {
    /// Runs `body` with error-level lines from FFmpeg on this thread captured instead of printed; returns the
    /// body's result and the captured lines (trimmed, without duplicates, at most 20).
    package static func capturingErrors<R>(_ body: () throws -> R) rethrows -> (result: R, lines: [String]) {
        installOnce()
        let capture = LogCapture()
        let previous = pthread_getspecific(captureKey)
        pthread_setspecific(captureKey, Unmanaged.passUnretained(capture).toOpaque())
        defer { pthread_setspecific(captureKey, previous) }
        let result = try withExtendedLifetime(capture) { try body() }
        return (result, capture.lines)
    }

    private static let installed: Bool = {
        av_log_set_callback(ingestLogCallback)
        return true
    }()

    private static func installOnce() { _ = installed }
}

/// One capture: lines accumulate until a newline ends each one (FFmpeg often logs a line in pieces).
final class LogCapture {
    private(set) var lines: [String] = []
    private var partial = ""

    func append(_ text: String) {
        partial += text
        while let newline = partial.firstIndex(of: "\n") {
            add(String(partial[..<newline]))
            partial = String(partial[partial.index(after: newline)...])
        }
    }

    /// Forgets the lines taken so far (a `CodecLog` hands them out once).
    func reset() { lines = [] }

    private func add(_ line: String) {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty, !lines.contains(trimmed), lines.count < 20 else { return }
        lines.append(trimmed)
    }
}

private let captureKey: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key, nil)
    return key
}()

/// The process-wide `av_log` callback (see `FFmpegLog`).
private func ingestLogCallback(
    _ avcl: UnsafeMutableRawPointer?, _ level: Int32, _ format: UnsafePointer<CChar>?, _ arguments: CVaListPointer?
) {
    guard let arguments else { return }
    guard let raw = pthread_getspecific(captureKey) else {
        // A codec's worker thread (frame-threaded decoding) has no capture of its own: its context may route it.
        if CodecLog.route(avcl, level: level, format: format, arguments: arguments) { return }
        av_log_default_callback(avcl, level, format, arguments)
        return
    }
    guard level <= AV_LOG_ERROR, let format else { return }
    let capture = Unmanaged<LogCapture>.fromOpaque(raw).takeUnretainedValue()
    withUnsafeTemporaryAllocation(of: CChar.self, capacity: 1024) { buffer in
        guard let base = buffer.baseAddress else { return }
        _ = vsnprintf(base, buffer.count, format, arguments)
        capture.append(String(cString: base))
    }
}

/// Error lines a codec logs from its own worker threads, where no per-thread capture exists (a frame-threaded
/// decoder reports "Error splitting the input into NAL units" from a worker). The codec context's `opaque` points
/// at its `CodecLog` (FFmpeg copies `opaque` into each worker's context); the log callback finds it there, so the
/// lines go into the transcode's error instead of stderr. Only registered pointers are trusted.
package final class CodecLog {
    private var stored: [String] = []
    private let partial = LogCapture()

    /// Registered logs (their addresses); its lock also serialises appends (several workers may log at once).
    private static let registry = Mutex<Set<UInt>>([])

    init() {}

    /// Registers this log and returns the value for `AVCodecContext.opaque`. Pair with `unregister()`, called
    /// only after the codec context (and its threads) is freed.
    func register() -> UnsafeMutableRawPointer {
        let pointer = Unmanaged.passUnretained(self).toOpaque()
        Self.registry.withLock { _ = $0.insert(UInt(bitPattern: pointer)) }
        return pointer
    }

    func unregister() {
        let address = UInt(bitPattern: Unmanaged.passUnretained(self).toOpaque())
        Self.registry.withLock { _ = $0.remove(address) }
    }

    /// Returns and clears the lines collected so far.
    func take() -> [String] {
        Self.registry.withLock { _ in
            let lines = partial.lines
            partial.reset()
            return lines
        }
    }

    /// Called by the log callback: true when `avcl` is a codec context whose `opaque` is a registered log (the
    /// line was taken, or dropped when below error level).
    static func route(
        _ avcl: UnsafeMutableRawPointer?, level: Int32, format: UnsafePointer<CChar>?, arguments: CVaListPointer
    ) -> Bool {
        guard let avcl, let codecClass = avcodec_get_class(),
            avcl.load(as: UnsafePointer<AVClass>?.self) == codecClass,
            let opaque = avcl.assumingMemoryBound(to: AVCodecContext.self).pointee.opaque
        else { return false }
        return registry.withLock { registered in
            guard registered.contains(UInt(bitPattern: opaque)) else { return false }
            guard level <= AV_LOG_ERROR, let format else { return true }
            let log = Unmanaged<CodecLog>.fromOpaque(opaque).takeUnretainedValue()
            withUnsafeTemporaryAllocation(of: CChar.self, capacity: 1024) { buffer in
                guard let base = buffer.baseAddress else { return }
                _ = vsnprintf(base, buffer.count, format, arguments)
                log.partial.append(String(cString: base))
            }
            return true
        }
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: Set<Character>) -> String {
        var slice = Substring(self)
        while let first = slice.first, set.contains(first) { slice.removeFirst() }
        while let last = slice.last, set.contains(last) { slice.removeLast() }
        return String(slice)
    }
}

extension Set where Element == Character {
    fileprivate static var whitespaces: Set<Character> { [" ", "\t", "\r"] }
}
