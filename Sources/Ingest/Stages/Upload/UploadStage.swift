import Foundation
import IngestNative

/// `upload`: sends the current file (`Item.artifact`) — streamed from disk in 256 KiB chunks with an exact
/// Content-Length, never read whole — to a signed URL (`put`), an S3 presigned POST form (`s3-post`), or a local
/// folder (`local`, atomically), or straight into a bucket with SigV4 (`s3`: one PUT, or multipart above a threshold;
/// see `S3Uploader`). Retries restart the body at byte 0; an expired signed URL is renewed once by
/// running the ticket request again.
public struct UploadStage: Stage {
    public enum Method: String, OptionEnum, Sendable {
        case put
        case s3Post = "s3-post"
        case local
        case s3
    }

    public enum ExpiredPolicy: String, OptionEnum, Sendable {
        case renew, fail
    }

    public struct Options: StageOptions, Sendable {
        public var method = Method.put
        public var url: Template?
        public var headers = HeaderTemplates()
        public var contentType: Template?
        public var fields: TemplateValue?
        public var expect: [Int]?
        public var key: Template?
        public var dir: String?
        public var overwrite = true
        public var onExpired = ExpiredPolicy.renew
        public var network = NetworkOptions()
        public var s3 = S3UploadOptions()
        public init() {}

        public static var fields: [OptionField<Options>] {
            [
                OptionField(
                    "method", \.method,
                    doc:
                        "`put` (PUT to a signed URL), `s3-post` (S3 presigned POST form), `local` (copy into `dir`) or "
                        + "`s3` (SigV4-signed upload into `bucket`, multipart for large files).",
                    default: "put"),
                OptionField("url", \.url, doc: "Target URL template (`{{ticket.upload_url}}`); put and s3-post."),
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
            ] + S3UploadOptions.fields(\.s3) + NetworkOptions.fields(\.network)
        }

        public func validate(at node: ConfigNode) throws {
            try network.validate(at: node)
            switch method {
            case .put, .s3Post:
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
            if method != .s3, let name = s3.givenNames.first {
                throw node.error("'\(name)' is only for method s3")
            }
            if fields != nil && method != .s3Post { throw node.error("'fields' is only for method s3-post") }
            if method == .s3Post && fields == nil {
                throw node.error("method s3-post needs 'fields' (the ticket's form fields)")
            }
            for status in expect ?? [] where !(100...599).contains(status) {
                throw node.error("expect: \(status) is not an HTTP status")
            }
        }
    }

    public static let name = "upload"
    public static let templateOffer: TemplateOffer? = TemplateOffer(name: name, fields: nil)
    public static let summary =
        "Uploads the file: PUT to a signed URL, S3 presigned POST, an atomic copy into a folder, or straight into an S3 "
        + "bucket (SigV4, multipart for large files)."
    public static let usesNetwork = true

    let options: Options
    let limiter: RateLimiter?
    let s3: S3Uploader?
    /// Why `method: s3` cannot upload (no credentials or region): `checkReadyToRun` fails `ingest run` with it before
    /// any file is read, while `ingest validate` and `ingest lint`, which send nothing, need no credentials.
    let s3Problem: String?

    public init(options: Options) throws {
        self.options = options
        limiter = options.network.rate.map(RateLimiter.init(rate:))
        if options.method == .s3 {
            do {
                s3 = try S3Uploader(stage: Self.name, options: options.s3, network: options.network, limiter: limiter)
                s3Problem = nil
            } catch let error as S3UploadConfigurationError {
                s3 = nil
                s3Problem = error.message
            }
        } else {
            s3 = nil
            s3Problem = nil
        }
    }

    public func checkReadyToRun() throws {
        if let s3Problem { throw S3UploadConfigurationError(message: s3Problem) }
    }

    public func run(_ item: Item, context: StageContext) throws -> StageOutcome {
        let scope = TemplateScope(item: item, context: context, stage: Self.name)
        switch options.method {
        case .local: return try copyLocally(item, scope: scope, context: context)
        case .s3: return try uploadToS3(item, scope: scope, context: context)
        case .put, .s3Post: break
        }
        var renewed = false
        while true {
            let prepared: Prepared
            do {
                prepared = try prepare(item, scope: scope)
            } catch let failed as ItemFailed
                where failed.failures.allSatisfy({ $0.rule == "policy.expiration" }) && options.onExpired == .renew
                && !renewed
            {
                try renewTicket(item, said: failed.failures.first?.message)
                renewed = true
                continue
            }
            let observer = DigestObserver(
                mode: Self.hashesWhileSending(item, context: context) ? .background : .countOnly)
            let total = prepared.request.body?.file?.size
            observer.progress = { context.reportProgress(done: $0, total: total) }
            var exchange = Exchange(
                stage: Self.name, options: options.network, limiter: limiter, cancellation: context.cancellation,
                logger: context.logger, timings: context.timings)
            exchange.rehearsal = context.rehearsal(for: item, stage: Self.name, success: prepared.expected.first ?? 200)
            let outcome = try exchange.send(prepared.request, observer: observer)
            let response = outcome.response
            if prepared.expected.contains(response.status) {
                if let file = prepared.request.body?.file, observer.count == file.size { observer.store(on: item) }
                if let name = context.resultName {
                    var result: JSONObject = [
                        "status": .int(Int64(response.status)), "bytes": .int(Self.fileBytesSent(prepared, response)),
                        "content_type": .string(prepared.contentType),
                    ]
                    if let etag = response.header("ETag") {
                        result["etag"] = .string(etag.trimmingCharacters(in: ["\""]))
                    }
                    if let location = response.header("Location") {
                        result["location"] = .string(Redaction.url(location))
                    }
                    item.facts[name] = .object(result)
                }
                return .proceed
            }
            let said = ServerMessage.of(response)
            if Self.isExpired(response), options.onExpired == .renew, !renewed {
                try renewTicket(item, said: said)
                renewed = true
                continue
            }
            let attempts = outcome.attempts > 1 ? " after \(outcome.attempts) attempts" : ""
            throw ItemFailed(
                stage: Self.name, rule: Self.isExpired(response) ? "expired" : "status",
                message: "\(prepared.request.method) \(Redaction.url(prepared.request.url)) answered "
                    + "\(ServerMessage.statusLine(response.status))\(attempts)\(said.map { ": \($0)" } ?? "")"
                    + (renewed && Self.isExpired(response) ? " (even after renewing the ticket)" : ""),
                expected: prepared.expected.map(String.init).joined(separator: ", "), actual: String(response.status))
        }
    }

    /// Whether sending the file should hash it on the way: only when the journal will record the original's hash
    /// and nothing has taken it yet (a dedupe key, a `{{sha256}}` rendered earlier, the journal's last run). With
    /// `--no-journal` nothing is hashed; a later `{{sha256}}` still reads the file when it is rendered.
    static func hashesWhileSending(_ item: Item, context: StageContext) -> Bool {
        context.wantsContentHash && item.artifact == item.path && item.knownSHA256 == nil
    }

    /// The file's bytes among those curl confirmed sent (the form's head and tail left out): the whole file for
    /// any 2xx answer (`HTTPClient` fails one that came early), else what went out before the server answered.
    static func fileBytesSent(_ prepared: Prepared, _ response: HTTPResponse) -> Int64 {
        guard let body = prepared.request.body, let file = body.file else { return 0 }
        return min(file.size, max(0, response.bytesSent - Int64(body.head.count)))
    }

    /// S3 (and the fixture backend) say so in the 403 body: "Request has expired" for a presigned URL,
    /// "Invalid according to Policy: Policy expired." for a POST policy.
    static func isExpired(_ response: HTTPResponse) -> Bool {
        guard response.status == 403 else { return false }
        let text = response.bodyText.lowercased()
        return text.contains("request has expired") || text.contains("policy expired")
    }

    /// Runs again the request stage whose `as:` result the URL or fields come from, so they are re-rendered from a
    /// fresh ticket.
    private func renewTicket(_ item: Item, said: String?) throws {
        let roots = ((options.url?.variables ?? []) + (options.fields?.variables ?? []))
            .map { String($0.split(separator: ".")[0]) }
        guard let name = roots.first(where: { item.rerun[$0] != nil }), let rerun = item.rerun[name] else {
            throw ItemFailed(
                stage: Self.name, rule: "expired",
                message: "the signed URL expired (\(said ?? "403")) and no earlier request stage made it with `as:`")
        }
        if case .skip(let reason) = try rerun() {
            throw ItemFailed(
                stage: Self.name, rule: "expired",
                message: "the signed URL expired and renewing the ticket '\(name)' was refused: \(reason)")
        }
    }

    struct Prepared {
        var request: HTTPRequest
        var expected: [Int]
        var contentType: String
    }

    private func prepare(_ item: Item, scope: TemplateScope) throws -> Prepared {
        guard let urlTemplate = options.url else {
            throw ItemFailed(stage: Self.name, rule: "url", message: "method \(options.method.rawValue) needs 'url'")
        }
        let url = try urlTemplate.render(scope)
        let contentType = try options.contentType?.render(scope) ?? Self.sniffedType(item.artifact)
        let headers = try options.headers.entries.map { (name: $0.name, value: try $0.value.render(scope)) }
        var request: HTTPRequest
        var expected: [Int]
        do {
            switch options.method {
            case .put:
                request = HTTPRequest(method: "PUT", url: url, headers: headers, body: try HTTPBody.file(item.artifact))
                if !headers.contains(where: { $0.name.lowercased() == "content-type" }) {
                    request.headers.append(("Content-Type", contentType))
                }
                expected = options.expect ?? [200]
            case .s3Post:
                let fields = try Self.formFields(
                    Rehearsal.placeholderFields(try (options.fields ?? .object([])).render(scope), item: item),
                    stage: Self.name)
                let form = MultipartForm(
                    fields: fields, fileName: item.artifactName,
                    fileType: fields.first {
                        $0.0.caseInsensitiveCompare("Content-Type") == .orderedSame
                    }?.1 ?? contentType)
                request = HTTPRequest(
                    method: "POST", url: url, headers: headers,
                    body: try HTTPBody.file(item.artifact, head: form.head, tail: form.tail))
                request.headers.append(("Content-Type", "multipart/form-data; boundary=\(form.boundary)"))
                let declared = fields.first { $0.0 == "success_action_status" }.flatMap { Int($0.1) }
                expected = options.expect ?? [declared ?? 204]
                try Self.checkPolicy(fields, fileName: item.artifactName, fileSize: request.body?.file?.size ?? 0)
            case .local, .s3:
                preconditionFailure("\(options.method.rawValue) has no single prepared request")
            }
        } catch let error as SystemError {
            throw ItemFailed(stage: Self.name, rule: "unreadable", message: "cannot read the file to upload: \(error)")
        }
        request.maxResponseBytes = 64 * 1024
        options.network.apply(to: &request)
        return Prepared(request: request, expected: expected, contentType: contentType)
    }

    /// S3 would refuse the form after the whole file arrived; the policy says so up front. A file that breaks a
    /// condition (size range, key prefix, content type, expiry) fails here, naming it, and nothing is sent.
    static func checkPolicy(_ fields: [(String, String)], fileName: String, fileSize: Int64) throws {
        guard fields.contains(where: { $0.0.lowercased() == "policy" }) else { return }
        var map: [String: String] = [:]
        for (name, value) in fields { map[name] = value }
        let policy: S3PostPolicy
        do {
            policy = try S3PostPolicy(decodingFields: map)
        } catch {
            throw ItemFailed(stage: name, rule: "policy", message: "\(error)")
        }
        let key = map.first { $0.key.lowercased() == "key" }?.value.replacingOccurrences(
            of: "${filename}", with: fileName)
        let violations = policy.check(fileSize: fileSize, key: key)
        guard violations.isEmpty else {
            throw ItemFailed(
                violations.map {
                    RuleFailure(
                        stage: name, rule: "policy.\($0.rule)", message: "the S3 POST policy refuses the file: \($0)")
                })
        }
    }

    /// The rendered `fields` as ordered name/value text pairs; anything but an object of scalars fails the file.
    static func formFields(_ value: JSONValue, stage: String) throws -> [(String, String)] {
        guard case .object(let object) = value else {
            throw ItemFailed(
                stage: stage, rule: "fields",
                message: "fields must be an object of form fields, found \(value.serialized().prefix(60))")
        }
        return try object.pairs.map { name, value in
            switch value {
            case .object, .array, .null:
                throw ItemFailed(stage: stage, rule: "fields", message: "form field '\(name)' is not text")
            default: return (name, value.stringValue ?? "")
            }
        }
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

    private func copyLocally(_ item: Item, scope: TemplateScope, context: StageContext) throws -> StageOutcome {
        let key = try scope.sanitizedKey(try (options.key ?? Template("{{artifact.path}}")).render(scope))
        let root = options.dir ?? "."
        if let tap = context.rehearsal(for: item, stage: Self.name, success: 200) {
            return try rehearseCopy(item, key: key, root: root, tap: tap, context: context)
        }
        func fail(_ message: String) -> ItemFailed { ItemFailed(stage: Self.name, rule: "local", message: message) }
        do {
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        } catch {
            throw fail("cannot create \(root): \(error.localizedDescription)")
        }
        guard let resolvedRoot = AtomicCopy.resolved(root) else { throw fail("cannot resolve \(root)") }
        let destination = resolvedRoot + "/" + key
        let parent = (destination as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        } catch {
            throw fail("cannot create the folder for key '\(key)': \(error.localizedDescription)")
        }
        // A symlink inside the destination must not lead the copy out of it.
        guard let resolvedParent = AtomicCopy.resolved(parent),
            resolvedParent == resolvedRoot || resolvedParent.hasPrefix(resolvedRoot + "/")
        else { throw fail("key '\(key)' leads outside \(root) (through a symlink)") }
        let finalPath = resolvedParent + "/" + (destination as NSString).lastPathComponent
        let observer = DigestObserver(mode: Self.hashesWhileSending(item, context: context) ? .inline : .countOnly)
        let bytes: Int64
        do {
            bytes = try AtomicCopy.copy(
                from: item.artifact, to: finalPath, replace: options.overwrite, observer: observer)
        } catch {
            throw ItemFailed(
                stage: Self.name, rule: { if case .changed = error { return "changed" } else { return "local" } }(),
                message: "copy to \(finalPath) failed: \(error)")
        }
        observer.store(on: item)
        if let name = context.resultName {
            item.facts[name] = .object(["path": .string(finalPath), "key": .string(key), "bytes": .int(bytes)])
        }
        return .proceed
    }
}

/// A multipart/form-data body (RFC 7578) for an S3 presigned POST: the fields in the given order, then the file
/// part last (S3 ignores fields after the file). Only the head and tail are in memory; the file streams between.
struct MultipartForm {
    let boundary: String
    let head: [UInt8]
    let tail: [UInt8]

    init(fields: [(String, String)], fileName: String, fileType: String, fileField: String = "file") {
        // A boundary must not occur in any part; a random one practically never does, but check anyway.
        let everything = fields.map { $0.0 + $0.1 }.joined() + fileName + fileType
        var candidate: String
        repeat {
            candidate = "ingest-" + (0..<24).map { _ in String("0123456789abcdef".randomElement()!) }.joined()
        } while everything.contains(candidate)
        boundary = candidate
        var text = ""
        for (name, value) in fields {
            text += "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(Self.quoted(name))\"\r\n\r\n\(value)\r\n"
        }
        text += "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(Self.quoted(fileField))\"; "
        // A type with CR or LF (from a ticket or a template) would end the part's headers early: drop them.
        let type = String(String.UnicodeScalarView(fileType.unicodeScalars.filter { $0 != "\r" && $0 != "\n" }))
        text += "filename=\"\(Self.quoted(fileName))\"\r\nContent-Type: \(type)\r\n\r\n"
        head = Array(text.utf8)
        tail = Array("\r\n--\(boundary)--\r\n".utf8)
    }

    /// RFC 7578 §4.2: in a quoted name, `"` and CR/LF are percent-encoded (as browsers do).
    static func quoted(_ text: String) -> String {
        text.replacingOccurrences(of: "\"", with: "%22").replacingOccurrences(of: "\r", with: "%0D")
            .replacingOccurrences(of: "\n", with: "%0A")
    }
}
