import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A lock held by a process on its way out: killed and still exiting (a supervisor without `systemd`'s wait restarts
/// the service at once), or gone while a copy of its descriptor lingers. Such a lock is let go within moments, so
/// taking it is tried again for a short, bounded time instead of refusing at once; a lock a live run holds is still
/// refused at once.
package enum ExitingLockHolder {
    /// Takes the lock with `lock`. Refused (`EWOULDBLOCK`) while the holder of the `flock` on `path` is exiting or
    /// gone, it tries again every 50 ms for up to `grace` seconds, calling `waiting` once (with the holder's pid,
    /// 0 when it let go in between) before the first wait. Rethrows the refusal when the holder is a live process, or when `grace`
    /// has passed. The grace is measured and waited on the caller's clock: `now` (monotonic seconds) and `pause`.
    package static func take<Lock>(
        path: String, grace: Double, now: () -> Double, pause: (Double) -> Void, waiting: (Int32) -> Void,
        lock: () throws(SystemError) -> Lock
    ) throws(SystemError) -> Lock {
        var deadline: Double?
        while true {
            do {
                return try lock()
            } catch  where error.errno == EWOULDBLOCK {
                guard let holder = holderOfLock(on: path), isExitingOrGone(holder) else { throw error }
                if let deadline {
                    if now() >= deadline { throw error }
                } else {
                    deadline = now() + grace
                    waiting(holder)
                }
                pause(0.05)
            }
        }
    }

    /// The pid `/proc/locks` names for the `flock` on the file at `path` (the process that took it, even if a child
    /// holds a copy of its descriptor); 0 when none is listed (it was let go in between); nil when it cannot be
    /// known (no `/proc`): the lock is then refused at once, as before.
    package static func holderOfLock(on path: String) -> Int32? {
        guard let inode = try? FileStatus(path: path, followLinks: true).inode,
            let locks = try? String(contentsOfFile: "/proc/locks", encoding: .utf8)
        else { return nil }
        for line in locks.split(separator: "\n") {
            // `1: FLOCK  ADVISORY  WRITE 1234 fe:00:5678 0 EOF`; a waiter's line has `->` after the number.
            let fields = line.split(separator: " ").filter { $0 != "->" }
            guard fields.count >= 6, fields[1] == "FLOCK",
                fields[5].split(separator: ":").last.flatMap({ UInt64($0) }) == inode
            else { continue }
            return Int32(fields[4])
        }
        return 0
    }

    /// True when process `pid` no longer runs, is a zombie, has begun to exit (`PF_EXITING` in its flags), or has a
    /// `SIGKILL` pending: whatever it holds is let go when it finishes exiting.
    package static func isExitingOrGone(_ pid: Int32) -> Bool {
        guard pid > 0, Processes.isAlive(pid) else { return true }
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else {
            return !Processes.isAlive(pid)
        }
        // `pid (comm) S ppid pgrp session tty tpgid flags …`: the name may hold spaces and parentheses.
        guard let close = stat.lastIndex(of: ")") else { return false }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 6 else { return false }
        if ["Z", "X", "x"].contains(fields[0]) { return true }
        let exitingFlag: UInt64 = 0x4  // PF_EXITING
        if let flags = UInt64(fields[6]), flags & exitingFlag != 0 { return true }
        return hasKillPending(pid)
    }

    /// `SIGKILL` in the process's pending signals (`ShdPnd`, `SigPnd` of `/proc/PID/status`).
    private static func hasKillPending(_ pid: Int32) -> Bool {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return false }
        let kill = UInt64(1) << UInt64(SIGKILL - 1)
        for line in status.split(separator: "\n") where line.hasPrefix("ShdPnd:") || line.hasPrefix("SigPnd:") {
            let mask = line.split(separator: "\t").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            if let bits = UInt64(mask, radix: 16), bits & kill != 0 { return true }
        }
        return false
    }
}
