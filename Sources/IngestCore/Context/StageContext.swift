import Foundation
import Logging

/// What a stage sees besides the item.
package struct StageContext: Sendable {
    package var settings: RunSettings
    /// The stage's `as:` name, if the pipeline gave one; results are stored under it.
    package var resultName: String?

    /// Where a stage that moves bytes (an upload, a transcode) says how far it got, for the live display.
    package var progress: (@Sendable (_ done: Int64, _ total: Int64?) -> Void)?
    /// Where a stage that waits (`poll`) says what it is waiting on (`processing 40%`), for the live display.
    package var status: (@Sendable (String) -> Void)?

    /// The stage's place in the run (0 for the first), set by the runner; nil when a stage is run on its own.
    package var position: Int?

    /// Set when the run is being stopped (Ctrl-C): network stages cancel their transfers through it.
    package var cancellation: RunCancellation?

    /// True when the journal will record each file's SHA-256: an upload then hashes the bytes it sends rather than
    /// the file being read once more afterwards. The runner sets it false for `--no-journal`.
    package var wantsContentHash = true

    /// True when an earlier run started this stage for the file and never finished it (it was killed mid-call) or
    /// failed it: what the stage sends may have reached the server already, so a 409 can be that call's echo.
    package var mayHaveRunBefore = false

    /// True when the run has already renewed this stage's ticket once (it threw `TicketExpired`, and the stage that
    /// made the ticket ran again): a ticket found expired now fails the file instead.
    package var ticketRenewed = false

    /// The run's logger with the file and stage as metadata (the runner sets them); nil logs nothing.
    package var logger: Logger?
    /// The file's timings, where each request records its attempts; nil when a stage is run on its own.
    package var timings: FileTimings?
    /// The run's journal, where a stage keeps what must survive a killed run (a tus upload's URL); nil without one.
    package var journal: (any StageJournal)?
    /// Where an upload keeps its transfer (a multipart upload's id and parts) so a later run resumes it; nil without
    /// a journal, or when a stage is run on its own.
    package var uploadJournal: UploadJournal?
    /// Named outputs (a poster, a proxy) whose every upload an earlier run finished, with what that run recorded of
    /// each: a stage that makes one of them does not make it again. Set by the runner from the journal.
    package var deliveredOutputs: [String: JSONValue] = [:]

    package init(
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
    package func workFolderName(for stage: String) -> String {
        position.map { "\($0)-\(stage)" } ?? stage
    }

    /// Reports bytes done (of `total`, when known) for the current stage; a no-op when nothing displays progress.
    package func reportProgress(done: Int64, total: Int64?) { progress?(done, total) }

    /// Shows `text` beside the file in the live display; a no-op when nothing displays progress.
    package func reportStatus(_ text: String) { status?(text) }
}

/// The part of the journal a stage may write itself: a key it keeps across a killed run (a tus upload's URL),
/// committed at once. `JournalStore` provides it; the stages see no more of the journal than this.
package protocol StageJournal: Sendable {
    func setMeta(_ key: String, _ value: String) throws
    func meta(_ key: String) throws -> String?
    func commit() throws
}
