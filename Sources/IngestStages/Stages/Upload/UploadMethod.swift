import Foundation
import IngestCore
import IngestTemplates

/// One way the `upload` stage delivers a file, chosen by `method:` (`UploadStage.init` builds it once per pipeline).
/// To add a method: a case in `UploadStage.Method`, its checks in `UploadStage.Options.validate`, a type here, and one
/// line in `UploadStage.init`.
protocol UploadMethod: Sendable {
    /// Fails `ingest run` before any file is read when the method cannot work (see `Stage.checkReadyToRun`).
    func checkReadyToRun() throws
    /// Delivers `item.artifact`; adds the `as:` result and, when it hashed the file on the way, its SHA-256.
    func upload(_ item: Item, scope: TemplateScope, context: StageContext) throws -> StageOutcome
}

extension UploadMethod {
    func checkReadyToRun() throws {}
}
