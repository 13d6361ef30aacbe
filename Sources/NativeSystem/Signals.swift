import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Ctrl-C and SIGTERM for a long run: the first signal is handed to a thread of our own (a signal handler may do
/// almost nothing, so it only writes the signal's number into a pipe), which calls `onSignal` to stop the run
/// cleanly; a second signal exits at once with 128 + its number, as shells expect of an impatient second Ctrl-C.
package enum InterruptSignals {
    /// Installs the handlers for SIGINT and SIGTERM (once per process; later calls only replace `onSignal`).
    package static func install(_ onSignal: @escaping @Sendable (Int32) -> Void) {
        state.withLock { state in
            state.callback = onSignal
            guard !state.installed else { return }
            state.installed = startWatcher()
        }
    }

    /// Opens the pipe, starts the thread reading it and sets the handlers; false when no pipe could be made.
    private static func startWatcher() -> Bool {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return false }
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        signalWriteEnd.store(fds[1], ordering: .relaxed)
        let readEnd = fds[0]
        let watcher = Thread {
            var byte: UInt8 = 0
            while true {
                let got = read(readEnd, &byte, 1)
                if got == 1 {
                    let callback = state.withLock { $0.callback }
                    callback?(Int32(byte))
                } else if got < 0 && errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
        watcher.name = "ingest-signals"
        watcher.start()
        // A parent may have started us with these blocked (libdispatch threads block signals); threads made from
        // here on inherit the mask of this one.
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        _ = signal(SIGINT, signalHandler)
        _ = signal(SIGTERM, signalHandler)
        return true
    }

    private struct State {
        var installed = false
        var callback: (@Sendable (Int32) -> Void)?
    }
    private static let state = Mutex(State())
}

/// Written by `install` before the handlers are set, read by them (atomics are lock-free: async-signal-safe).
private let signalWriteEnd = Atomic<Int32>(-1)
/// Signals received so far.
private let signalsReceived = Atomic<Int32>(0)

/// Async-signal-safe only: `write` and `_exit`.
private let signalHandler: @convention(c) (Int32) -> Void = { number in
    if signalsReceived.add(1, ordering: .relaxed).newValue > 1 { _exit(128 + number) }
    var byte = UInt8(truncatingIfNeeded: number)
    _ = write(signalWriteEnd.load(ordering: .relaxed), &byte, 1)
}
