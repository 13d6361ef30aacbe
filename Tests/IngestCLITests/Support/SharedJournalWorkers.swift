import Foundation
import Testing

@testable import IngestJournal

/// Waits (polling every 50 ms, about a minute at most) until `journal` counts at least `count` files done, for tests
/// that kill one of several workers once a fair part of the batch is done. Fails the test when the workers stop
/// (`running` turns false) or the batch never gets that far.
func waitUntilDone(_ count: Int, in journal: PostgresJournal, while running: () -> Bool) throws {
    var polls = 0
    while (try? journal.counts()[.done] ?? 0) ?? 0 < count {
        polls += 1
        try #require(polls < 1_200 && running(), "the batch did not get going")
        usleep(50_000)
    }
}
