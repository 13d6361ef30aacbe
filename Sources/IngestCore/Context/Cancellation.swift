import Foundation
import IngestNative

/// A run asked to stop (Ctrl-C, SIGTERM): set once, never cleared. Transfers in flight that registered here are
/// cancelled at once, backoff and rate-limit waits end early, no new file starts, and stages that see it fail their
/// file as interrupted (not done), so the journal sends the next run back to that stage.
package final class RunCancellation: @unchecked Sendable {
    private let condition = NSCondition()
    private var why: String?
    private var transfers: [ObjectIdentifier: HTTPTransfer] = [:]
    private var observers: [@Sendable () -> Void] = []

    package init() {}

    package var isCancelled: Bool { reason != nil }

    /// What stopped the run (`SIGINT`), or nil while it goes on.
    package var reason: String? {
        condition.lock()
        defer { condition.unlock() }
        return why
    }

    /// Stops the run; later calls do nothing. Safe from any thread (not from a signal handler).
    package func cancel(reason: String) {
        condition.lock()
        guard why == nil else {
            condition.unlock()
            return
        }
        why = reason
        let inFlight = Array(transfers.values)
        let toNotify = observers
        observers.removeAll()
        condition.broadcast()
        condition.unlock()
        for transfer in inFlight { transfer.cancel() }
        for observer in toNotify { observer() }
    }

    /// Runs `observer` when the run is cancelled (at once if it already is).
    package func onCancel(_ observer: @escaping @Sendable () -> Void) {
        condition.lock()
        if why == nil {
            observers.append(observer)
            condition.unlock()
        } else {
            condition.unlock()
            observer()
        }
    }

    /// Keeps `transfer` to cancel with the run; a run already cancelled cancels it at once.
    package func register(_ transfer: HTTPTransfer) {
        condition.lock()
        let cancelled = why != nil
        if !cancelled { transfers[ObjectIdentifier(transfer)] = transfer }
        condition.unlock()
        if cancelled { transfer.cancel() }
    }

    package func unregister(_ transfer: HTTPTransfer) {
        condition.lock()
        transfers[ObjectIdentifier(transfer)] = nil
        condition.unlock()
    }

    /// Sleeps up to `seconds`; returns false as soon as the run is cancelled.
    package func sleep(_ seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        condition.lock()
        defer { condition.unlock() }
        while why == nil {
            if !condition.wait(until: deadline) { return why == nil }
        }
        return false
    }
}

extension ItemFailed {
    /// The file was stopped by a cancelled run: reported as failed, journaled as unfinished.
    package static func interrupted(stage: String, reason: String?, during what: String) -> ItemFailed {
        ItemFailed(
            stage: stage, rule: .interrupted,
            message: "interrupted (\(reason ?? "cancelled")) during \(what); the next run repeats it")
    }
}
