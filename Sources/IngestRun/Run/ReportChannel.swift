import Dispatch
import IngestCore
import Synchronization

/// The hand-over between a blocking run (its own thread) and an async consumer (`RunReports`): at most `limit`
/// reports wait here, and the run's thread blocks while that many do, so a consumer slower than the workers holds
/// the run back instead of letting reports pile up. A consumer that goes away (its task cancelled, its loop left)
/// stops the run through the run's `RunCancellation`.
final class ReportChannel: Sendable {
    private enum Delivery {
        case report(ItemReport)
        case end
        case failure(any Error)
        case wait
    }

    private struct State {
        var buffer: [ItemReport] = []
        /// The consumer waiting in `next()`, resumed by the next report or the run's end.
        var waiting: CheckedContinuation<ItemReport?, any Error>?
        /// Set once the consumer stopped listening: the run is cancelled and what it sends is dropped.
        var stopped = false
        /// A loop reads the reports (an iterator was made).
        var hasReader = false
        /// Reports are dropped rather than kept: `summary` was asked for without a loop over the reports.
        var discarding = false
        /// Set when the run returned or threw.
        var end: Result<RunSummary, any Error>?
        /// The run's error has been thrown out of `next()` once; afterwards the sequence just ends.
        var endDelivered = false
        var summaryWaiters: [CheckedContinuation<RunSummary, any Error>] = []
        /// The most reports that ever waited at once (for the tests of the bound).
        var peak = 0
        /// True while the run's thread waits for room.
        var producerBlocked = false
    }

    let limit: Int
    private let state = Mutex(State())
    /// Signalled whenever a report is taken or the consumer stops: the blocked run looks again.
    private let room = DispatchSemaphore(value: 0)
    /// Called once, when the consumer stops listening before the run ended.
    private let onStop: @Sendable () -> Void

    init(limit: Int, onStop: @escaping @Sendable () -> Void) {
        self.limit = max(1, limit)
        self.onStop = onStop
    }

    /// Hands a report to the consumer, blocking while `limit` reports wait; throws `CancellationError` once the
    /// consumer stopped listening, which stops the run.
    func send(_ report: ItemReport) throws {
        while true {
            let waiting: CheckedContinuation<ItemReport?, any Error>?? = try state.withLock { state in
                if state.stopped { throw CancellationError() }
                if state.discarding { return .some(nil) }
                if let waiting = state.waiting {
                    state.waiting = nil
                    return .some(waiting)
                }
                guard state.buffer.count < limit else {
                    state.producerBlocked = true
                    return nil
                }
                state.buffer.append(report)
                state.peak = max(state.peak, state.buffer.count)
                return .some(nil)
            }
            switch waiting {
            case .some(let consumer):
                consumer?.resume(returning: report)
                return
            case .none:
                room.wait()
                state.withLock { $0.producerBlocked = false }
            }
        }
    }

    /// The run ended: the consumer gets the reports still waiting, then the end (or the run's error).
    func finish(_ result: Result<RunSummary, any Error>) {
        let (consumer, summaryWaiters) = state.withLock { state in
            state.end = result
            defer {
                state.waiting = nil
                state.summaryWaiters = []
            }
            return (state.buffer.isEmpty ? state.waiting : nil, state.summaryWaiters)
        }
        if let consumer { deliver(take(), to: consumer) }
        for waiter in summaryWaiters { waiter.resume(with: result) }
    }

    /// The next report, nil at the end; throws the run's error once, where the blocking `run` would have thrown.
    func next() async throws -> ItemReport? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (consumer: CheckedContinuation<ItemReport?, any Error>) in
                let delivery = state.withLock { state in
                    let delivery = Self.take(from: &state)
                    if case .wait = delivery { state.waiting = consumer }
                    return delivery
                }
                if case .report = delivery { room.signal() }
                if case .wait = delivery { return }
                deliver(delivery, to: consumer)
            }
        } onCancel: {
            stop()
        }
    }

    /// The consumer stopped listening (its task was cancelled, or its loop ended before the run did): the run is
    /// cancelled, and a consumer still waiting gets `CancellationError`.
    func stop() {
        let (consumer, first) = state.withLock { state in
            let first = !state.stopped && state.end == nil
            state.stopped = true
            state.buffer = []
            defer { state.waiting = nil }
            return (state.waiting, first)
        }
        room.signal()
        consumer?.resume(throwing: CancellationError())
        if first { onStop() }
    }

    /// A loop reads the reports: `summary` leaves them to it.
    func attachReader() { state.withLock { $0.hasReader = true } }

    /// Waits for the run to end. Without a loop over the reports, they are dropped from then on, not kept for a
    /// loop that will not come.
    func summary() async throws -> RunSummary {
        try await withCheckedThrowingContinuation { waiter in
            let end = state.withLock { state in
                if !state.hasReader {
                    state.discarding = true
                    state.buffer = []
                }
                if state.end == nil { state.summaryWaiters.append(waiter) }
                return state.end
            }
            room.signal()
            if let end { waiter.resume(with: end) }
        }
    }

    /// The most reports that waited at once, and whether the run's thread waits for room now.
    var bufferState: (peak: Int, producerBlocked: Bool) {
        state.withLock { ($0.peak, $0.producerBlocked) }
    }

    private func take() -> Delivery {
        state.withLock { Self.take(from: &$0) }
    }

    private static func take(from state: inout State) -> Delivery {
        if !state.buffer.isEmpty { return .report(state.buffer.removeFirst()) }
        if state.stopped { return .failure(CancellationError()) }
        switch state.end {
        case nil: return .wait
        case .success?: return .end
        case .failure(let error)?:
            if state.endDelivered { return .end }
            state.endDelivered = true
            return .failure(error)
        }
    }

    private func deliver(_ delivery: Delivery, to consumer: CheckedContinuation<ItemReport?, any Error>) {
        switch delivery {
        case .report(let report): consumer.resume(returning: report)
        case .end, .wait: consumer.resume(returning: nil)
        case .failure(let error): consumer.resume(throwing: error)
        }
    }
}
