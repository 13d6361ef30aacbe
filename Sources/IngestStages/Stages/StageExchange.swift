import IngestCore
import IngestNetwork

extension StageContext {
    /// The exchange a network stage sends one file's call through: the stage's retry and pacing options, this run's
    /// cancellation, clock, `-v` log and timings, the stage's own `deadline` when it has one, and in a rehearsal the
    /// tap that answers `success` instead of the network.
    func exchange(
        stage: String, network: NetworkOptions, limiter: RateLimiter?, for item: Item, success: Int,
        deadline: StageDeadline? = nil
    ) -> Exchange {
        Exchange(
            stage: stage, options: network, limiter: limiter, cancellation: cancellation,
            rehearsal: rehearsal(for: item, stage: stage, success: success), logger: logger, timings: timings,
            clock: settings.clock, deadline: deadline)
    }
}
