import Foundation
import IngestCore
import IngestFiles
import IngestMedia
import IngestNetwork
import IngestTemplates
import NativeCurl

/// `upload`: sends the current file (`Item.artifact`) — streamed from disk in 256 KiB chunks with an exact
/// Content-Length, never read whole — to a signed URL (`put`), an S3 presigned POST form (`s3-post`), or a local
/// folder (`local`, atomically), or straight into a bucket with SigV4 (`s3`: one PUT, or multipart above a threshold;
/// see `S3Uploader`). Retries restart the body at byte 0; an expired signed URL is renewed once by
/// running the ticket request again.
package struct UploadStage: Stage {
    /// What the stage reads itself: `method:`, which picks the method whose options (`UploadMethod.Options`, their
    /// spec in the method's folder) the rest of the mapping holds, and `output:`. Decoding hands the other keys to
    /// the chosen method's spec (`UploadMethods.all`); a key of another method is refused there, naming it.
    package struct Options: StageOptions, Sendable {
        package var method = UploadMethods.all.defaultTag
        /// Sends the named output (a poster, a proxy) instead of the file.
        package var output: String?
        /// The chosen method's options, decoded by its spec, ready to build it.
        var makeMethod: UploadMethodMaker?
        package init() {}

        package init(from node: ConfigNode, errors: inout [PipelineFileError]) {
            self.init()
            let before = errors.count
            let (common, chosen) = UploadMethods.all.split(node, common: Self.fields.map(\.name), errors: &errors)
            guard errors.count == before else { return }
            self.init(from: common, level: .options, errors: &errors)
            guard errors.count == before, let chosen else { return }
            makeMethod = chosen.variant.decode(chosen.node, &errors)
        }

        package static var fields: [OptionField<Options>] {
            [
                UploadMethods.all.tagField(\.method),
                OptionField(
                    "output", \.output,
                    doc:
                        "Send the named output an earlier stage made (`poster`, `proxy`) instead of the file; its key "
                        + "defaults to `{{outputs.NAME.path}}` (`day1/clip.poster.jpg`).",
                    default: "the file"),
            ]
        }

        /// `method:` and `output:`, then every method's options, each saying which methods take it.
        package static var fieldDocs: [OptionDoc] {
            fields.map(\.optionDoc) + UploadMethods.all.mergedFieldDocs
        }

        package static var jsonSchema: JSONValue {
            var common = JSONObject()
            for field in fields { common[field.name] = field.schema }
            return UploadMethods.all.jsonSchema(common: common)
        }

        package func validate(at node: ConfigNode) throws {
            if let output { try OutputName.check(output, at: node) }
        }

        /// The key `local` and `s3` send to when none is given: the output's path with `output:`, else the file's.
        func defaultKey() throws -> Template {
            try Template(output.map { "{{outputs.\($0).path}}" } ?? "{{artifact.path}}")
        }
    }

    package static let name = "upload"
    package static let templateOffer: TemplateOffer? = TemplateOffer(name: name, fields: nil)
    package static let summary =
        "Uploads the file: PUT to a signed URL, S3 presigned POST, an atomic copy into a folder, or straight into an S3 "
        + "bucket (SigV4, multipart for large files)."
    package static let usesNetwork = true

    let options: Options
    /// What `method:` chose, built with the stage.
    let method: any UploadMethod

    package init(options: Options) throws {
        guard let make = options.makeMethod else {
            throw PipelineFileError(location: nil, message: "upload: method \(options.method) was not decoded")
        }
        self.options = options
        method = try make(options)
    }

    package func checkReadyToRun() throws { try method.checkReadyToRun() }

    package func run(_ item: Item, context: StageContext) throws -> StageOutcome {
        if let output = options.output { return try uploadOutput(output, of: item, context: context) }
        return try method.upload(
            item, scope: TemplateScope(item: item, context: context, stage: Self.name), context: context)
    }

    /// The output an `upload` with `output:` sends; nil for the file.
    package var outputName: String? { options.output }

    /// Whether sending the file should hash it on the way: only when the journal will record the original's hash
    /// and nothing has taken it yet (a dedupe key, a `{{sha256}}` rendered earlier, the journal's last run). With
    /// `--no-journal` nothing is hashed; a later `{{sha256}}` still reads the file when it is rendered.
    static func hashesWhileSending(_ item: Item, context: StageContext) -> Bool {
        context.wantsContentHash && item.artifact == item.path && item.journalIdentity == nil
    }

    /// S3 (and the fixture backend) say so in the 403 body: "Request has expired" for a presigned URL,
    /// "Invalid according to Policy: Policy expired." for a POST policy.
    static func isExpired(_ response: HTTPResponse) -> Bool {
        guard response.status == 403 else { return false }
        let text = response.bodyText.lowercased()
        return text.contains("request has expired") || text.contains("policy expired")
    }

    /// The media type from the file's magic bytes (the extension can lie).
    static func sniffedType(_ path: String) -> String {
        let kind = (try? Sniffer.sniff(path: path)) ?? .unknown
        switch kind {
        case .quicktime: return "video/quicktime"
        case .mp4: return "video/mp4"
        case .m4a: return "audio/mp4"
        case .matroska: return "video/x-matroska"
        case .webm: return "video/webm"
        case .wav: return "audio/wav"
        case .mp3: return "audio/mpeg"
        case .aac: return "audio/aac"
        case .flac: return "audio/flac"
        case .ogg: return "audio/ogg"
        case .jpeg: return "image/jpeg"
        case .png: return "image/png"
        case .heif: return "image/heic"
        case .gif: return "image/gif"
        case .webp: return "image/webp"
        default: return "application/octet-stream"
        }
    }
}
