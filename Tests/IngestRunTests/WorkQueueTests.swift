import Foundation
import Synchronization
import Testing

@testable import IngestRun

/// The work queue hands out as many entries as a big batch has, on a worker's stack. `ingest validate` over a
/// folder of ~10,800 files died with SIGSEGV in a debug build: the walker's closure, held in a `Mutex` directly,
/// gained a reabstraction thunk at every `take()`, so the 10,000th call ran through 20,000 nested thunks.
@Suite struct WorkQueueTests {
    @Test func handsOutAHundredThousandEntriesInOrderOnAWorkersStack() {
        let count = 100_000
        let taken = Mutex(0)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            var produced = 0
            let queue = WorkQueue(
                next: {
                    guard produced < count else { return nil }
                    produced += 1
                    return InputEntry(path: "f\(produced)", relativePath: "f\(produced)", size: 0)
                }, window: Int.max / 2)
            var expected = 0
            while let (index, entry) = queue.take() {
                guard index == expected, entry.path == "f\(index + 1)" else { break }
                expected += 1
            }
            taken.withLock { $0 = expected }
            done.signal()
        }
        thread.stackSize = 8 << 20  // what `Runner` gives a worker
        thread.start()
        done.wait()
        #expect(taken.withLock { $0 } == count)
    }
}
