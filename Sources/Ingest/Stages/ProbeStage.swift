/// `probe`: opens the container in-process with libavformat (never an ffprobe subprocess) and records what it
/// finds as the fact `probe` for reports, templates (`{{probe.duration}}`) and later stages.
public struct ProbeStage: Stage {
    public struct Options: StageOptions, Sendable {
        public init() {}
        public static var fields: [OptionField<Options>] { [] }
    }

    public static let name = "probe"
    public static let summary = "Reads container, duration, streams, creation time and location (libavformat, libexif, libheif)."

    public init(options: Options) throws {}

    public func run(_ item: Item, context: StageContext) throws -> StageOutcome {
        let probe = try context.probe(item, stage: Self.name)
        item.facts[context.resultName ?? "probe"] = .object(probe.json)
        return .proceed
    }
}
