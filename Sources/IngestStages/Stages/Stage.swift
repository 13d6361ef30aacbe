import Foundation
import IngestCore
import IngestTemplates

/// One step of a pipeline. A stage is one file: its options type (which drives decoding, docs and the schema),
/// a name it is registered under, and `run`, which is called on a worker thread and may block on C libraries.
package protocol Stage: Sendable {
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
    /// True when running the stage again gives a fresh answer under its `as:` name (a ticket's signed URL, a job's
    /// signed result URLs): when a later stage finds what it rendered from that answer expired (it throws
    /// `TicketExpired`), the run renews the answer through `renew`. Default false.
    var renewsAnswer: Bool { get }
    /// Asks again for the answer saved under `as:`, for a later stage that found it expired: the call `run` makes,
    /// without what only a first call does. The run calls it (`FileRun`), journals the new answer and runs the
    /// later stage again. Default: `run`.
    func renew(_ item: Item, context: StageContext) throws -> StageOutcome
    /// Seconds after its journaled start that a call this stage made, cut short by a run that died, may still be in
    /// flight; a resumed file waits that long before the stage checks (`verify:`) whether the call was done. nil:
    /// nothing to wait for (the stage does not verify its calls). Default nil.
    var settleSeconds: Double? { get }
}

extension Stage {
    package func checkReadyToRun() throws {}
    package var renewsAnswer: Bool { false }
    package func renew(_ item: Item, context: StageContext) throws -> StageOutcome { try run(item, context: context) }
    package var settleSeconds: Double? { nil }
    package static var usesNetwork: Bool { false }
    package static var writesWorkFiles: Bool { false }
    package static var templateOffer: TemplateOffer? { nil }
}
