import IngestCore
import IngestTemplates

/// `probe`: opens the container in-process with libavformat (never an ffprobe subprocess) and records what it
/// finds as the fact `probe` for reports, templates (`{{probe.duration}}`) and later stages.
package struct ProbeStage: Stage {
    package struct Options: StageOptions, Sendable {
        package init() {}
        package static var fields: [OptionField<Options>] { [] }
    }

    package static let name = "probe"
    package static let summary =
        "Reads container, duration, streams, creation time and location (libavformat, libexif, libheif)."
    /// The probe fact's fields (`ProbeResult.json`) and the shortcuts templates add (`TemplateScope.probeShortcuts`).
    package static let templateOffer: TemplateOffer? = TemplateOffer(
        name: "probe",
        fields: [
            "content", "format", "streams", "location", "width", "height", "orientation", "date_time_original",
            "has_gps", "duration", "size", "format_name",
        ])

    package init(options: Options) throws {}

    package func run(_ item: Item, context: StageContext) throws -> StageOutcome {
        let probe = try context.probe(item, stage: Self.name)
        item.facts[context.resultName ?? "probe"] = .object(probe.json)
        return .proceed
    }
}
