#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Questions about other processes, so code outside IngestNative never reads `errno`.
package enum Processes {
    /// Whether process `pid` exists: `kill(pid, 0)` sends no signal, and `EPERM` means it exists but belongs to
    /// another user.
    package static func isAlive(_ pid: Int32) -> Bool { kill(pid, 0) == 0 || errno == EPERM }
}
