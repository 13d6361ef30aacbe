import Foundation
import IngestCore
import IngestNetwork
import IngestTemplates

/// One way the `upload` stage delivers a file, chosen by `method:`. A method owns its options: `Options` is a
/// `StageOptions` whose fields are the method's one spec — decoding, docs/pipeline-reference.md and the JSON Schema
/// read them, and the stage refuses a key the method does not declare, naming the methods that do
/// (`OptionVariants`). A new method is a folder here (the type, its `Options`) and one line in `UploadMethods.all`.
protocol UploadMethod: Sendable {
    associatedtype Options: StageOptions & Sendable
    /// Its `method:` value.
    static var name: String { get }
    /// What it does, a few words for `method:`'s doc.
    static var summary: String { get }
    /// Builds the method once per pipeline, from its options and the stage's (`output:`).
    init(options: Options, stage: UploadStage.Options) throws
    /// Fails `ingest run` before any file is read when the method cannot work (see `Stage.checkReadyToRun`).
    func checkReadyToRun() throws
    /// Delivers `item.artifact`; adds the `as:` result and, when it hashed the file on the way, its SHA-256.
    func upload(_ item: Item, scope: TemplateScope, context: StageContext) throws -> StageOutcome
}

extension UploadMethod {
    func checkReadyToRun() throws {}
}

/// A method's decoded options, waiting for the stage's options to build the method.
typealias UploadMethodMaker = @Sendable (UploadStage.Options) throws -> any UploadMethod

extension OptionVariant where Value == UploadMethodMaker {
    /// A method's line in `UploadMethods.all`.
    static func method<Method: UploadMethod>(_ type: Method.Type) -> Self {
        OptionVariant(Method.name, Method.Options.self, summary: Method.summary) { options in
            { stage in try Method(options: options, stage: stage) }
        }
    }
}

/// The options several methods take alike; each method declares them in its own spec through these.
enum UploadFields {
    static func url<Root>(_ path: WritableKeyPath<Root, Template?>, doc: String) -> OptionField<Root> {
        OptionField("url", path, doc: doc, required: true)
    }

    static func headers<Root>(_ path: WritableKeyPath<Root, HeaderTemplates>) -> OptionField<Root> {
        OptionField("headers", path, doc: "Extra request header templates.", default: "{}")
    }

    static func contentType<Root>(_ path: WritableKeyPath<Root, Template?>) -> OptionField<Root> {
        OptionField(
            "content_type", path,
            doc: "Content-Type template; sniffed from the bytes when absent (video/quicktime, audio/mp4, image/jpeg …)."
        )
    }

    static func key<Root>(_ path: WritableKeyPath<Root, Template?>, doc: String) -> OptionField<Root> {
        OptionField(
            "key", path, doc: doc + " (sanitised: no `..`, no leading `/`, no control characters).",
            default: "{{artifact.path}}")
    }

    /// `timeout`, then the retry and connection options every network method takes (`NetworkOptions`).
    static func network<Root>(_ path: WritableKeyPath<Root, NetworkOptions>) -> [OptionField<Root>] {
        [
            OptionField(
                "timeout", path.appending(path: \.timeout), range: DurationValue.timeoutRange,
                doc:
                    "Limit for one attempt (one request; for `s3` multipart, one part), answer included. None by "
                    + "default, as a large file on a slow link may take long: `min_speed` and `stall_timeout` end "
                    + "an attempt that stalls or trickles in any phase.")
        ] + NetworkOptions.fields(path)
    }
}

extension UploadStage {
    /// `content_type` rendered, else the type sniffed from the file's bytes.
    static func contentType(_ template: Template?, of item: Item, scope: TemplateScope) throws -> String {
        try template?.render(scope) ?? sniffedType(item.artifact)
    }
}
