import Foundation
import Logging

/// What a stage sees besides the item.
public struct StageContext: Sendable {
    public var settings: RunSettings
    /// The stage's `as:` name, if the pipeline gave one; results are stored under it.
    public var resultName: String?

    /// Where a stage that moves bytes (an upload, a transcode) says how far it got, for the live display.
    public var progress: (@Sendable (_ done: Int64, _ total: Int64?) -> Void)?
    /// Where a stage that waits (`poll`) says what it is waiting on (`processing 40%`), for the live display.
    public var status: (@Sendable (String) -> Void)?

    /// The stage's place in the run (0 for the first), set by the runner; nil when a stage is run on its own.
    public var position: Int?

    /// Set when the run is being stopped (Ctrl-C): network stages cancel their transfers through it.
    public var cancellation: RunCancellation?

    /// True when the journal will record each file's SHA-256: an upload then hashes the bytes it sends rather than
    /// the file being read once more afterwards. The runner sets it false for `--no-journal`.
    public var wantsContentHash = true

    /// True when an earlier run started this stage for the file and never finished it (it was killed mid-call) or
    /// failed it: what the stage sends may have reached the server already, so a 409 can be that call's echo.
    public var mayHaveRunBefore = false

    /// The run's logger with the file and stage as metadata (the runner sets them); nil logs nothing.
    public var logger: Logger?
    /// The file's timings, where each request records its attempts; nil when a stage is run on its own.
    public var timings: FileTimings?

    public init(
        settings: RunSettings, resultName: String? = nil,
        progress: (@Sendable (_ done: Int64, _ total: Int64?) -> Void)? = nil, position: Int? = nil,
        cancellation: RunCancellation? = nil
    ) {
        self.settings = settings
        self.resultName = resultName
        self.progress = progress
        self.position = position
        self.cancellation = cancellation
        self.logger = settings.logger
    }

    /// The folder under the work folder that a stage named `stage` writes its files into: `<position>-<stage>`
    /// (`3-jpeg`) in a run, so two stages of one kind (a resize, then a recompress) each write a file of their own
    /// rather than the second finding its output path taken by its input; `<stage>` when run on its own.
    public func workFolderName(for stage: String) -> String {
        position.map { "\($0)-\(stage)" } ?? stage
    }

    /// Reports bytes done (of `total`, when known) for the current stage; a no-op when nothing displays progress.
    public func reportProgress(done: Int64, total: Int64?) { progress?(done, total) }

    /// Shows `text` beside the file in the live display; a no-op when nothing displays progress.
    public func reportStatus(_ text: String) { status?(text) }
}

/// One step of a pipeline. A stage is one file: its options type (which drives decoding, docs and the schema),
/// a name it is registered under, and `run`, which is called on a worker thread and may block on C libraries.
public protocol Stage: Sendable {
    associatedtype Options: StageOptions
    /// The key in the pipeline file (`validate`, `probe` …).
    static var name: String { get }
    /// One line for docs and the schema.
    static var summary: String { get }
    /// True when the stage talks to the network: `ingest validate` leaves it out, and the journal records that it
    /// started before it runs (so a crash mid-call is known) and its results as soon as it is done.
    static var usesNetwork: Bool { get }
    /// True when the stage writes files into the work folder (a transcode): `max_work_bytes` applies to it.
    static var writesWorkFiles: Bool { get }
    /// What the stage leaves for later templates without an `as:` (`probe` → `{{probe.duration}}`); nil when
    /// nothing. Lint and load check templates against it (`TemplateCheck`).
    static var templateOffer: TemplateOffer? { get }

    init(options: Options) throws
    /// Problems only a run that uses the stage cares about (an upload's missing credentials), checked by `ingest run`
    /// before any file is read; `ingest validate`, which leaves network stages out, does not ask them.
    func checkReadyToRun() throws
    /// Works on one item. Throws `ItemFailed` when the file breaks a rule; other errors become an internal failure.
    func run(_ item: Item, context: StageContext) throws -> StageOutcome
    /// Called instead of `run` when a resumed file reuses this stage's journaled results: a stage whose answer can
    /// go stale (a ticket's signed URL) sets up its renewal here. Does nothing by default.
    func reused(_ item: Item, context: StageContext)
    /// Seconds after its journaled start that a call this stage made, cut short by a run that died, may still be in
    /// flight; a resumed file waits that long before the stage checks (`verify:`) whether the call was done. nil:
    /// nothing to wait for (the stage does not verify its calls). Default nil.
    var settleSeconds: Double? { get }
}

extension Stage {
    public func checkReadyToRun() throws {}
    public func reused(_ item: Item, context: StageContext) {}
    public var settleSeconds: Double? { nil }
    public static var usesNetwork: Bool { false }
    public static var writesWorkFiles: Bool { false }
    public static var templateOffer: TemplateOffer? { nil }
}
