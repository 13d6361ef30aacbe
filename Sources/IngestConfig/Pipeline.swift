import Foundation
import IngestCore
import IngestStages
import IngestTemplates

/// Which files a pipeline takes from the paths it is given.
package struct InputSpec: Sendable {
    /// Globs matched against the path relative to the input root (`**/*.mov`); empty means every file.
    package var include: [String] = []
    /// Globs that drop files (`**/.*`).
    package var exclude: [String] = []
    package var followSymlinks = false
    /// Folder levels below the root to descend (nil: no limit; 0: only the root's own files).
    package var maxDepth: Int?
    package init() {}
}

/// One configured step: the stage, the name its results are stored under, and where it stands in the file.
package struct ConfiguredStage: Sendable {
    package var name: String
    package var stage: any Stage
    package var usesNetwork: Bool
    package var resultName: String?
    package var location: SourceLocation
    /// True when the stage writes files into the work folder (a transcode): `max_work_bytes` applies to it.
    package var writesWorkFiles = false
    /// `when:` — the files the stage applies to; nil for every file.
    package var condition: StageCondition? = nil
}

/// A pipeline file, checked and ready to run. Loading fails as a whole with every error found: nothing runs
/// when the file is invalid.
public struct Pipeline: Sendable {
    package var version: Int
    /// The pipeline's `name:`.
    public var name: String
    package var input: InputSpec
    /// Files worked on at once (default: number of cores).
    package var concurrency: Int
    /// Ceiling of `concurrency` (file and `--concurrency`): a worker is a thread, and past this the threads only
    /// contend for the cores and the journal.
    package static let maxConcurrency = 1024
    package var stages: [ConfiguredStage]
    /// The file it was loaded from (or a label for text).
    package var source: String
    /// `dedupe.key`: files whose keys are equal are ingested once.
    package var dedupe: DedupeKey?
    /// `max_work_bytes`: bound on the work folder, in bytes.
    package var maxWorkBytes: Int64?
    /// `on_success` / `on_failure`: what becomes of a file once it is done (`Disposal/`).
    package var disposal = Disposal()
    /// `settle`: seconds a file must stay unchanged before `ingest watch` takes it (nil: the default, 5 s).
    package var settle: Double?
    /// Ceiling of `settle` and `--settle`: a day.
    package static let maxSettle = 86_400.0
    /// `bwlimit` (or `--bwlimit`): the cap on the bytes per second all the run's uploads send together.
    package var bandwidth: BandwidthLimit?
    /// SHA-256 of what decides a file's result — `version`, `stages` and `dedupe` after `${VAR}` interpolation — so
    /// the journal redoes files when the pipeline changes. `name`, `input`, `concurrency` and `max_work_bytes` are
    /// left out: changing them changes no file's result.
    package var configHash: String

    package init(
        version: Int = 1, name: String, input: InputSpec = InputSpec(), concurrency: Int? = nil,
        stages: [ConfiguredStage] = [], source: String = "<memory>", dedupe: DedupeKey? = nil,
        maxWorkBytes: Int64? = nil, configHash: String = ""
    ) {
        self.version = version
        self.name = name
        self.input = input
        self.concurrency = concurrency ?? ProcessInfo.processInfo.activeProcessorCount
        self.stages = stages
        self.source = source
        self.dedupe = dedupe
        self.maxWorkBytes = maxWorkBytes
        self.configHash = configHash
    }
}

extension Pipeline {
    /// Asks every stage that will run whether it can (`Stage.checkReadyToRun`): an `s3` upload without credentials
    /// stops `ingest run` here, naming what to set, before a journal is opened or a file read. `offline` (validate)
    /// leaves the network stages out, as the run does.
    package func checkReadyToRun(offline: Bool) throws {
        var errors: [PipelineFileError] = []
        for configured in stages where !(offline && configured.usesNetwork) {
            do {
                try configured.stage.checkReadyToRun()
            } catch {
                errors.append(PipelineFileError(location: configured.location, message: "\(configured.name): \(error)"))
            }
        }
        if !errors.isEmpty { throw PipelineFileErrors(errors) }
    }
}
