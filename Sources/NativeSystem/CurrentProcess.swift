#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// This process as the C library sees it (its id, its terminals, its environment, the names of its signals), so
/// code outside IngestNative never calls `getpid`, `isatty` or `setenv`, nor spells `SIGINT` itself.
package enum CurrentProcess {
    /// `getpid()`: named in work folders, lock files, leases and spool files.
    package static var id: Int32 { getpid() }

    /// Whether standard output is a terminal (`isatty(1)`).
    package static var standardOutputIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }

    /// Whether standard error is a terminal (`isatty(2)`).
    package static var standardErrorIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }

    /// The descriptor of standard output (1), to tell a report written to `/dev/stdout` from one to a file.
    package static let standardOutputDescriptor = STDOUT_FILENO

    /// Writes all of `bytes` to standard output; a failure (`EPIPE`, `ENOSPC` …) keeps the C text.
    package static func writeToStandardOutput(_ bytes: [UInt8]) throws(SystemError) {
        try writeAll(bytes, to: STDOUT_FILENO, name: "standard output")
    }

    /// Writes `bytes` to standard error, as far as it takes them (a closed one is no reason to stop a run).
    package static func writeToStandardError(_ bytes: [UInt8]) {
        try? writeAll(bytes, to: STDERR_FILENO, name: "standard error")
    }

    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32, name: String) throws(SystemError) {
        var done = 0
        while done < bytes.count {
            let wrote = bytes.withUnsafeBytes { buffer -> Int in
                guard let base = buffer.baseAddress else { return 0 }
                return write(descriptor, base + done, bytes.count - done)
            }
            if wrote < 0, errno == EINTR { continue }
            guard wrote > 0 else { throw SystemError(call: "write", path: name, errno: errno) }
            done += wrote
        }
    }

    /// Sets (`setenv`) or, for nil, removes (`unsetenv`) the environment variable `name` of this process.
    package static func setEnvironment(_ name: String, to value: String?) {
        if let value { setenv(name, value, 1) } else { unsetenv(name) }
    }

    /// The name a report gives a signal: `SIGINT`, `SIGTERM`, or `signal N` for another.
    package static func signalName(_ number: Int32) -> String {
        switch number {
        case SIGINT: "SIGINT"
        case SIGTERM: "SIGTERM"
        default: "signal \(number)"
        }
    }
}
