import IngestCore
import IngestTemplates

/// A stage type as the registry knows it, with its options erased.
package struct StageDescriptor: Sendable {
    package let name: String
    package let summary: String
    package let usesNetwork: Bool
    package let writesWorkFiles: Bool
    package let templateOffer: TemplateOffer?
    package let optionsSchema: JSONValue
    /// Each option's name, doc, default and type, for the docs reference.
    package let optionDocs: [OptionDoc]
    let make: @Sendable (ConfigNode, inout [PipelineFileError]) -> (any Stage)?

    init<S: Stage>(_ type: S.Type) {
        name = S.name
        summary = S.summary
        usesNetwork = S.usesNetwork
        writesWorkFiles = S.writesWorkFiles
        templateOffer = S.templateOffer
        optionsSchema = S.Options.jsonSchema
        optionDocs = S.Options.fieldDocs
        make = { node, errors in
            let before = errors.count
            let options = S.Options(from: node, errors: &errors)
            guard errors.count == before else { return nil }
            do {
                return try S(options: options)
            } catch let error as PipelineFileError {
                errors.append(error)
            } catch {
                errors.append(node.error("\(S.name): \(error)"))
            }
            return nil
        }
    }

    /// Builds the stage from its options node, adding every problem of the options to `errors`; nil when it
    /// cannot be built.
    package func instantiate(_ node: ConfigNode, errors: inout [PipelineFileError]) -> (any Stage)? {
        make(node, &errors)
    }
}

/// Every stage, by name. A new stage is one file plus one line here.
package enum StageRegistry {
    package static let all: [StageDescriptor] = [
        StageDescriptor(ValidateStage.self),
        StageDescriptor(ProbeStage.self),
        StageDescriptor(GeohashStage.self),
        StageDescriptor(LookupStage.self),
        StageDescriptor(JpegStage.self),
        StageDescriptor(AudioStage.self),
        StageDescriptor(VideoStage.self),
        StageDescriptor(PosterStage.self),
        StageDescriptor(ThumbnailsStage.self),
        StageDescriptor(RequestStage.self),
        StageDescriptor(UploadStage.self),
        StageDescriptor(PollStage.self),
        StageDescriptor(SaveStage.self),
    ]

    package static func descriptor(named name: String) -> StageDescriptor? { all.first { $0.name == name } }
    package static var names: [String] { all.map(\.name) }
}
