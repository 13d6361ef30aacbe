import Foundation
import Logging

/// Settings of a run that every stage may need.
public struct RunSettings: Sendable {
    /// Directory for temp and transcoded files (`.ingest/work` under the current folder by default).
    public var workDirectory: String
    /// Per-file limit for one probe (FFmpeg is interrupted past it).
    public var probeTimeout: Double
    /// True for `ingest validate`: stages that need the network are left out.
    public var offline: Bool
    /// The process environment (for `${VAR}` and `env.NAME`).
    public var environment: [String: String]
    /// Set for `--dry-run` and `ingest test`: network stages render their requests and ask it instead of sending.
    public var rehearsal: Rehearsal?
    /// Where `-v` events go (each request's attempts); nil logs nothing.
    public var logger: Logger?

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

/// What a stage sees besides the item.
public struct StageContext: Sendable {
    public var settings: RunSettings
    /// The stage's `as:` name, if the pipeline gave one; results are stored under it.
    public var resultName: String?

    /// Where a stage that moves bytes (an upload, a transcode) says how far it got, for the live display.
    public var progress: (@Sendable (_ done: Int64, _ total: Int64?) -> Void)?

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

    /// The item's probe, computed once and cached on the item (validate, probe and geohash share it).
    public func probe(_ item: Item, stage: String) throws -> ProbeResult {
        if let cached = item.probeResult { return cached }
        if let failed = item.probeError { throw failed }
        do {
            let result = try Prober.probe(path: item.artifact, timeout: settings.probeTimeout)
            item.probeResult = result
            return result
        } catch let error as ProbeError {
            let failed = ItemFailed(stage: stage, rule: error.rule, message: error.message)
            item.probeError = failed
            throw failed
        }
    }
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
}

extension Stage {
    public func checkReadyToRun() throws {}
    public static var usesNetwork: Bool { false }
    public static var writesWorkFiles: Bool { false }
    public static var templateOffer: TemplateOffer? { nil }
}

/// A stage type as the registry knows it, with its options erased.
public struct StageDescriptor: Sendable {
    public let name: String
    public let summary: String
    public let usesNetwork: Bool
    public let writesWorkFiles: Bool
    public let templateOffer: TemplateOffer?
    public let optionsSchema: JSONValue
    /// Name, doc and default of each option, for the README reference.
    public let optionDocs: [(name: String, doc: String, required: Bool, defaultText: String?)]
    let make: @Sendable (ConfigNode) throws -> any Stage

    init<S: Stage>(_ type: S.Type) {
        name = S.name
        summary = S.summary
        usesNetwork = S.usesNetwork
        writesWorkFiles = S.writesWorkFiles
        templateOffer = S.templateOffer
        optionsSchema = S.Options.jsonSchema
        optionDocs = S.Options.fields.map { ($0.name, $0.doc, $0.required, $0.defaultText) }
        make = { node in
            let options = try S.Options(from: node)
            do {
                return try S(options: options)
            } catch let error as PipelineFileError {
                throw error
            } catch {
                throw node.error("\(S.name): \(error)")
            }
        }
    }

    /// Builds the stage from its options node.
    public func instantiate(_ node: ConfigNode) throws -> any Stage { try make(node) }
}

/// Every stage, by name. A new stage is one file plus one line here.
public enum StageRegistry {
    public static let all: [StageDescriptor] = [
        StageDescriptor(ValidateStage.self),
        StageDescriptor(ProbeStage.self),
        StageDescriptor(GeohashStage.self),
        StageDescriptor(LookupStage.self),
        StageDescriptor(JpegStage.self),
        StageDescriptor(AudioStage.self),
        StageDescriptor(VideoStage.self),
        StageDescriptor(RequestStage.self),
        StageDescriptor(UploadStage.self),
    ]

    public static func descriptor(named name: String) -> StageDescriptor? { all.first { $0.name == name } }
    public static var names: [String] { all.map(\.name) }
}
