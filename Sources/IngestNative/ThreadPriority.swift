internal import CIngestShims

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The scheduling priority of the calling thread.
package enum ThreadPriority {
    /// Makes the calling thread the last to get a core (nice 19): work that may wait, such as writing the journal's
    /// records of local work, then uses the time the run's other threads leave idle instead of taking it from them.
    /// Returns the error text when the system refused (the thread then keeps its priority; nothing else changes).
    @discardableResult
    package static func lowerCurrentThread() -> String? {
        let code = ingest_set_current_thread_nice(19)
        return code == 0 ? nil : String(cString: strerror(code))
    }
}
