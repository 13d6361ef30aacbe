import Foundation
import IngestCore
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
    package enum Method: String, OptionEnum, Sendable {
        case put
        case s3Post = "s3-post"
        case local
        case s3
        case tus
    }

    package enum ExpiredPolicy: String, OptionEnum, Sendable {
        case renew, fail
    }

    package struct Options: StageOptions, Sendable {
        package var method = Method.put
        package var url: Template?
        package var headers = HeaderTemplates()
        package var contentType: Template?
        package var fields: TemplateValue?
        package var expect: [Int]?
        package var key: Template?
        package var dir: String?
        package var overwrite = true
        package var onExpired = ExpiredPolicy.renew
        package var network = NetworkOptions()
        package var s3 = S3UploadOptions()
        package var tus = TusUploadOptions()
        /// Sends the named output (a poster, a proxy) instead of the file.
        package var output: String?
        package init() {}

        package static var fields: [OptionField<Options>] {
            [
                OptionField(
                    "method", \.method,
                    doc:
                        "`put` (PUT to a signed URL), `s3-post` (S3 presigned POST form), `local` (copy into `dir`), "
                        + "`s3` (SigV4-signed upload into `bucket`, multipart for large files) or `tus` (a resumable "
                        + "tus 1.0 upload created at `url`; see docs/large-files.md).",
                    default: "put"),
                OptionField(
                    "url", \.url,
                    doc: "Target URL template (`{{ticket.upload_url}}`); put and s3-post; tus: the creation endpoint."),
                OptionField("headers", \.headers, doc: "Extra request header templates.", default: "{}"),
                OptionField(
                    "content_type", \.contentType,
                    doc:
                        "Content-Type template; sniffed from the bytes when absent (video/quicktime, audio/mp4, image/jpeg …)."
                ),
                OptionField(
                    "fields", \.fields,
                    doc: "s3-post form fields, sent in order before the file (`{{ticket.upload_fields}}` or a mapping)."
                ),
                OptionField(
                    "expect", \.expect, doc: "Statuses that count as success.",
                    default: "[200] for put; [204] or success_action_status for s3-post"),
                OptionField(
                    "key", \.key,
                    doc:
                        "local: path under `dir`; s3: object key (sanitised: no `..`, no leading `/`, no control characters).",
                    default: "{{artifact.path}}"),
                OptionField("dir", \.dir, doc: "local: destination folder; nothing is written outside it."),
                OptionField(
                    "overwrite", \.overwrite, doc: "local: replace an existing file at the key.", default: "true"),
                OptionField(
                    "on_expired", \.onExpired,
                    doc:
                        "A 403 saying the signed URL or policy expired: `renew` (run the ticket request again, once) or `fail`.",
                    default: "renew"),
                OptionField(
                    "output", \.output,
                    doc:
                        "Send the named output an earlier stage made (`poster`, `proxy`) instead of the file; its key "
                        + "defaults to `{{outputs.NAME.path}}` (`day1/clip.poster.jpg`).",
                    default: "the file"),
                OptionField(
                    "timeout", \.network.timeout, range: DurationValue.timeoutRange,
                    doc:
                        "Limit for one attempt (one request; for `s3` multipart, one part), answer included. None by "
                        + "default, as a large file on a slow link may take long: `min_speed` and `stall_timeout` end "
                        + "an attempt that stalls or trickles in any phase."),
            ] + S3UploadOptions.fields(\.s3) + TusUploadOptions.fields(\.tus) + NetworkOptions.fields(\.network)
        }

        package func validate(at node: ConfigNode) throws {
            try network.validate(at: node)
            if let output { try OutputName.check(output, at: node) }
            switch method {
            case .put, .s3Post, .tus:
                if url == nil { throw node.error("method \(method.rawValue) needs 'url'") }
                if dir != nil { throw node.error("'dir' is only for method local") }
            case .local:
                if dir == nil { throw node.error("method local needs 'dir'") }
                if url != nil { throw node.error("'url' is not used by method local") }
            case .s3:
                if url != nil {
                    throw node.error("'url' is not used by method s3 (give 'bucket', 'key' and 'endpoint')")
                }
                if dir != nil { throw node.error("'dir' is only for method local") }
                try s3.validate(at: node)
            }
            if method != .s3, let name = s3.givenNames.first(where: { method != .tus || $0 != "metadata" }) {
                throw node.error("'\(name)' is only for method s3")
            }
            if tus.chunkSize != nil && method != .tus { throw node.error("'chunk_size' is only for method tus") }
            try tus.validate(at: node)
            if fields != nil && method != .s3Post { throw node.error("'fields' is only for method s3-post") }
            if method == .s3Post && fields == nil {
                throw node.error("method s3-post needs 'fields' (the ticket's form fields)")
            }
            for status in expect ?? [] where !(100...599).contains(status) {
                throw node.error("expect: \(status) is not an HTTP status")
            }
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
        var options = options
        if let output = options.output, options.key == nil { options.key = try Template("{{outputs.\(output).path}}") }
        self.options = options
        let limiter = options.network.rate.map(RateLimiter.init(rate:))
        switch options.method {
        case .put: method = PutUpload(options: options, limiter: limiter)
        case .s3Post: method = S3PostUpload(options: options, limiter: limiter)
        case .local: method = LocalUpload(options: options)
        case .s3: method = try S3Upload(options: options, limiter: limiter)
        case .tus: method = TusUpload(options: options, limiter: limiter)
        }
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

extension UploadStage.Options {
    /// `key` rendered and sanitised (local and s3): the artifact's path when not given.
    func renderedKey(_ scope: TemplateScope) throws -> String {
        try scope.sanitizedKey(try (key ?? Template("{{artifact.path}}")).render(scope))
    }

    /// `content_type` rendered, else the type sniffed from the file's bytes.
    func renderedContentType(_ item: Item, scope: TemplateScope) throws -> String {
        try contentType?.render(scope) ?? UploadStage.sniffedType(item.artifact)
    }
}
