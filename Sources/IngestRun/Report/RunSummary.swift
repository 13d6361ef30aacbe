import IngestCore

/// Counts of a finished run.
public struct RunSummary: Sendable, Equatable {
    /// Files that went through every stage.
    public var passed = 0
    /// Files that broke a rule or met an error.
    public var failed = 0
    /// Files left out (done in an earlier run, a duplicate, not matched by a stage).
    public var skipped = 0
    /// No files yet.
    public init() {}
    /// Every file the run saw.
    public var total: Int { passed + failed + skipped }

    /// Counts one more file (for reports rebuilt from the journal).
    package mutating func add(_ status: ItemStatus) { count(status) }

    mutating func count(_ status: ItemStatus) {
        switch status {
        case .passed: passed += 1
        case .failed: failed += 1
        case .skipped: skipped += 1
        }
    }

    /// `3 passed, 1 failed, 0 skipped` — the closing line of every report.
    public var line: String { "\(passed) passed, \(failed) failed, \(skipped) skipped" }
}
