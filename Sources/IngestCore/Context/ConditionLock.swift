import Foundation

/// A value behind a lock, with a condition a thread can block on until another thread changes the value (as
/// swift-nio's `ConditionLock`). For the few places where a thread must wait: a full window of files, a rate
/// limit's pause, a transfer or a writer to finish. Everything else shares state through `Synchronization.Mutex`.
// unchecked: `value` is only read or written while `condition` (NSCondition: a pthread mutex and condition) is held
package final class ConditionLock<Value>: @unchecked Sendable {
    private let condition = NSCondition()
    private var value: Value

    package init(_ value: Value) { self.value = value }

    /// Runs `body` with the value under the lock; waiters are not woken (use `change` when they should be).
    package func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        condition.lock()
        defer { condition.unlock() }
        return try body(&value)
    }

    /// Runs `body` with the value under the lock, then wakes every waiter to look at the value again.
    package func change<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        return try body(&value)
    }

    /// Blocks until `ready(value)` holds, then runs `body` under the same hold of the lock.
    package func wait<R>(until ready: (Value) -> Bool, then body: (inout Value) throws -> R) rethrows -> R {
        condition.lock()
        defer { condition.unlock() }
        while !ready(value) { condition.wait() }
        return try body(&value)
    }

    /// Blocks until `ready(value)` holds or `seconds` of real time pass (`RealTime`: a liveness bound, or the real
    /// clock's own sleep), then runs `body` under the same hold of the lock; `body` is told whether the value became
    /// ready.
    package func wait<R>(
        until ready: (Value) -> Bool, timeout seconds: Double, then body: (inout Value, _ ready: Bool) throws -> R
    ) rethrows -> R {
        let deadline = RealTime.deadline(in: seconds)
        condition.lock()
        defer { condition.unlock() }
        var isReady = ready(value)
        while !isReady {
            if !condition.wait(until: deadline) {
                isReady = ready(value)
                break
            }
            isReady = ready(value)
        }
        return try body(&value, isReady)
    }
}
