import Foundation

/// What a request body is drawn through when the run caps its bandwidth (`--bwlimit`): a shared allowance of bytes
/// (the run's token bucket, `SendLimiter` in IngestCore). curl's read callback takes what it may send now and pauses
/// its transfer while the allowance is empty; the client thread resumes it when there is more.
package protocol SendAllowance: AnyObject, Sendable {
    /// Takes up to `wanted` bytes of allowance now; 0 when the caller must wait (see `secondsUntilAvailable`).
    func take(upTo wanted: Int) -> Int
    /// Gives back allowance taken but not used (a read that found fewer bytes than it was allowed).
    func giveBack(_ bytes: Int)
    /// How long until at least 1 KiB of allowance is there (0 with no cap in force).
    func secondsUntilAvailable() -> Double
}

extension HTTPClient {
    /// Resumes the transfers the bandwidth cap paused once it allows more bytes, and says how long to poll: until
    /// then while some are paused (a paused transfer leaves its socket idle, so the poll sleeps), else a second.
    /// Called on the client thread only.
    static func resumePaused(_ transfers: some Collection<HTTPTransfer>) -> Int32 {
        let paused = transfers.filter(\.pausedForBandwidth)
        guard !paused.isEmpty else { return 1000 }
        let wait = paused.compactMap { $0.sendLimiter?.secondsUntilAvailable() }.min() ?? 0
        if wait > 0 { return Int32(max(1, min(1000, (wait * 1000).rounded(.up)))) }
        for transfer in paused {
            transfer.pausedForBandwidth = false
            transfer.easy.unpause()
        }
        return 1
    }
}
