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
    /// Name, doc and default of each option, for the README reference.
    package let optionDocs: [(name: String, doc: String, required: Bool, defaultText: String?)]
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
    package func instantiate(_ node: ConfigNode) throws -> any Stage { try make(node) }
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
        StageDescriptor(RequestStage.self),
        StageDescriptor(UploadStage.self),
        StageDescriptor(PollStage.self),
        StageDescriptor(SaveStage.self),
    ]

    package static func descriptor(named name: String) -> StageDescriptor? { all.first { $0.name == name } }
    package static var names: [String] { all.map(\.name) }
}
