import Foundation
import Logging

/// Settings of a run that every stage may need.
public struct RunSettings: Sendable {
    /// Directory for temp and transcoded files (`.ingest/work` under the current folder by default).
    public var workDirectory: String
    /// Per-file limit for one probe (FFmpeg is interrupted past it).
    public var probeTimeout: Double
    /// True for `ingest validate`: stages that need the network are left out.
    package var offline: Bool
    /// The process environment (for `${VAR}` and `env.NAME`).
    public var environment: [String: String]
    /// Set for `--dry-run` and `ingest test`: network stages render their requests and ask it instead of sending.
    package var rehearsal: Rehearsal?
    /// Where `-v` events go (each request's attempts); nil logs nothing.
    package var logger: Logger?
    /// The clock every wait of the run reads and sleeps on (retries, `Retry-After`, `rate`, a poll's interval),
    /// and every time it states (a report's, an S3 signature's; give the journal, `RunMetrics`, `RunProgress` and
    /// the log handler the same one); tests put a `ManualClock` here.
    package var clock: any WaitClock = SystemClock()

    /// Settings with the defaults the command line uses; `environment` is the process's unless given.
    public init(
        workDirectory: String = ".ingest/work", probeTimeout: Double = 10, offline: Bool = false,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) {
        self.workDirectory = workDirectory
        self.probeTimeout = probeTimeout
        self.offline = offline
        self.environment = environment
    }
}
