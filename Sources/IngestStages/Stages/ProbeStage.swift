import IngestCore
import IngestTemplates

/// `probe`: opens the container in-process with libavformat (never an ffprobe subprocess) and records what it
/// finds as the fact `probe` for reports, templates (`{{probe.duration}}`) and later stages.
public struct ProbeStage: Stage {
    public struct Options: StageOptions, Sendable {
        public init() {}
        public static var fields: [OptionField<Options>] { [] }
    }

    public static let name = "probe"
    public static let summary =
        "Reads container, duration, streams, creation time and location (libavformat, libexif, libheif)."
    /// The probe fact's fields (`ProbeResult.json`) and the shortcuts templates add (`TemplateScope.probeShortcuts`).
    public static let templateOffer: TemplateOffer? = TemplateOffer(
        name: "probe",
        fields: [
            "content", "format", "streams", "location", "width", "height", "orientation", "date_time_original",
            "has_gps", "duration", "size", "format_name",
        ])

    public init(options: Options) throws {}

    public func run(_ item: Item, context: StageContext) throws -> StageOutcome {
        let probe = try context.probe(item, stage: Self.name)
        item.facts[context.resultName ?? "probe"] = .object(probe.json)
        return .proceed
    }
}
