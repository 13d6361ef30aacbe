import Foundation

/// Work in flight that a cancelled run stops at once (an HTTP transfer: IngestNetwork makes NativeCurl's
/// `HTTPTransfer` one), so the model knows no transfer type.
package protocol CancellableWork: AnyObject, Sendable {
    /// Stops the work; it ends with its own cancellation error. Called from any thread.
    func cancel()
}

/// A run asked to stop (Ctrl-C, SIGTERM): set once, never cleared. Transfers in flight that registered here are
/// cancelled at once, backoff and rate-limit waits end early, no new file starts, and stages that see it fail their
/// file as interrupted (not done), so the journal sends the next run back to that stage.
package final class RunCancellation: WaitInterruption {
    private struct State {
        var why: String?
        var transfers: [ObjectIdentifier: any CancellableWork] = [:]
        var observers: [@Sendable () -> Void] = []
    }
    /// `sleep` blocks a worker thread (a backoff, a rate limit's wait) until the deadline or the cancellation.
    private let state = ConditionLock(State())
    /// The run's bandwidth cap (`bwlimit`), shared by every transfer that registers here (see `Exchange.perform`).
    package let sendLimiter: SendLimiter?

    package init() { sendLimiter = nil }

    package init(sendLimiter: SendLimiter?) { self.sendLimiter = sendLimiter }

    package var isCancelled: Bool { reason != nil }

    /// What stopped the run (`SIGINT`), or nil while it goes on.
    package var reason: String? {
        state.withLock { $0.why }
    }

    /// Stops the run; later calls do nothing. Safe from any thread (not from a signal handler).
    package func cancel(reason: String) {
        let cancelled: (inFlight: [any CancellableWork], toNotify: [@Sendable () -> Void])? = state.change { state in
            guard state.why == nil else { return nil }
            state.why = reason
            defer { state.observers.removeAll() }
            return (Array(state.transfers.values), state.observers)
        }
        guard let (inFlight, toNotify) = cancelled else { return }
        for transfer in inFlight { transfer.cancel() }
        for observer in toNotify { observer() }
    }

    /// Runs `observer` when the run is cancelled (at once if it already is).
    package func onCancel(_ observer: @escaping @Sendable () -> Void) {
        let added = state.withLock { state in
            guard state.why == nil else { return false }
            state.observers.append(observer)
            return true
        }
        if !added { observer() }
    }

    /// Keeps `transfer` to cancel with the run; a run already cancelled cancels it at once.
    package func register(_ transfer: any CancellableWork) {
        let cancelled = state.withLock { state in
            if state.why == nil { state.transfers[ObjectIdentifier(transfer)] = transfer }
            return state.why != nil
        }
        if cancelled { transfer.cancel() }
    }

    package func unregister(_ transfer: any CancellableWork) {
        state.withLock { $0.transfers[ObjectIdentifier(transfer)] = nil }
    }

    /// Sleeps up to `seconds` of real time (`SystemClock`'s sleep); returns false as soon as the run is cancelled.
    package func sleep(_ seconds: Double) -> Bool {
        state.wait(until: { $0.why != nil }, timeout: seconds) { _, cancelled in !cancelled }
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
