import Foundation
import IngestCore
import IngestFiles
import IngestNetwork
import IngestTemplates
import NativeCurl
import NativeSystem

/// What `put` and `s3-post` share: one request carrying the file to a URL that a ticket handed out, retried by
/// `Exchange`, judged by `expect`. When the signed URL or POST policy expired it throws `TicketExpired`: the run
/// renews the ticket (the request stage that made it runs again) and runs the upload again, once. The methods
/// differ only in the request they build.
protocol SignedURLUpload: UploadMethod {
    var signed: SignedURLOptions { get }
    var limiter: RateLimiter? { get }
    /// The form fields, for `s3-post`: their templates may name the ticket too.
    var formFields: TemplateValue? { get }
    /// The request carrying the file to `url`, with the rendered `headers`, and the statuses that count as success.
    func request(
        for item: Item, url: String, headers: [(name: String, value: String)], contentType: String,
        scope: TemplateScope
    ) throws -> (request: HTTPRequest, expected: [Int])
}

/// The options `put` and `s3-post` both take (each declares them in its spec through `fields`).
struct SignedURLOptions: Sendable {
    enum ExpiredPolicy: String, OptionEnum, Sendable {
        case renew, fail
    }

    var url: Template?
    var headers = HeaderTemplates()
    var contentType: Template?
    var expect: [Int]?
    var onExpired = ExpiredPolicy.renew
    var network = NetworkOptions()

    static func fields<Root>(_ path: WritableKeyPath<Root, SignedURLOptions>, expect: String) -> [OptionField<Root>] {
        [
            UploadFields.url(
                path.appending(path: \.url), doc: "Target URL template (`{{ticket.upload_url}}`)."),
            UploadFields.headers(path.appending(path: \.headers)),
            UploadFields.contentType(path.appending(path: \.contentType)),
            OptionField(
                "expect", path.appending(path: \.expect), doc: "Statuses that count as success.", default: expect),
            OptionField(
                "on_expired", path.appending(path: \.onExpired),
                doc:
                    "A 403 saying the signed URL or policy expired: `renew` (run the ticket request again, once) or `fail`.",
                default: "renew"),
        ] + UploadFields.network(path.appending(path: \.network))
    }

    func validate(at node: ConfigNode) throws {
        try network.validate(at: node)
        for status in expect ?? [] where !(100...599).contains(status) {
            throw node.error("expect: \(status) is not an HTTP status")
        }
    }
}

extension SignedURLUpload {
    var formFields: TemplateValue? { nil }
}

/// A signed-URL upload's request, ready to send.
struct PreparedUpload {
    var request: HTTPRequest
    var expected: [Int]
    var contentType: String
}

extension SignedURLUpload {
    func upload(_ item: Item, scope: TemplateScope, context: StageContext) throws -> StageOutcome {
        let renews = signed.onExpired == .renew && !context.ticketRenewed
        let prepared: PreparedUpload
        do {
            prepared = try prepare(item, scope: scope)
        } catch let failed as ItemFailed
            where failed.failures.allSatisfy({ $0.rule == .policy("expiration") }) && renews
        {
            throw ticketExpired(said: failed.failures.first?.message)
        }
        let (outcome, observer) = try send(prepared, item: item, context: context)
        let response = outcome.response
        if prepared.expected.contains(response.status) {
            if let file = prepared.request.body?.file, observer.count == file.size { observer.store(on: item) }
            if let name = context.resultName { item.facts[name] = Self.result(prepared, response) }
            return .proceed
        }
        let said = ServerMessage.of(response)
        if UploadStage.isExpired(response), renews { throw ticketExpired(said: said) }
        throw Self.refusal(prepared, outcome, said: said, renewed: context.ticketRenewed)
    }

    /// Renders the URL, content type and headers, and builds the method's request (a file that cannot be read
    /// fails as `unreadable`).
    private func prepare(_ item: Item, scope: TemplateScope) throws -> PreparedUpload {
        guard let urlTemplate = signed.url else {
            throw ItemFailed(stage: UploadStage.name, rule: .url, message: "method \(Self.name) needs 'url'")
        }
        let url = try urlTemplate.renderURL(scope)
        let contentType = try UploadStage.contentType(signed.contentType, of: item, scope: scope)
        let headers = try signed.headers.entries.map { (name: $0.name, value: try $0.value.render(scope)) }
        var built: (request: HTTPRequest, expected: [Int])
        do {
            built = try request(for: item, url: url, headers: headers, contentType: contentType, scope: scope)
        } catch let error as SystemError {
            throw ItemFailed(
                stage: UploadStage.name, rule: .unreadable, message: "cannot read the file to upload: \(error)")
        }
        built.request.maxResponseBytes = 64 * 1024
        signed.network.apply(to: &built.request)
        return PreparedUpload(request: built.request, expected: built.expected, contentType: contentType)
    }

    /// Sends the request (rehearsed in a rehearsal), identifying the file on the way when the journal wants it.
    private func send(_ prepared: PreparedUpload, item: Item, context: StageContext) throws -> (
        Exchange.Outcome, DigestObserver
    ) {
        // The journal's XXH3 identity is taken on curl's thread as each chunk is read: at memory speed, it costs
        // less than handing the chunk to another thread would.
        let identifies = UploadStage.hashesWhileSending(item, context: context)
        let observer = DigestObserver(sha256: false, identity: identifies, mode: identifies ? .inline : .countOnly)
        let total = prepared.request.body?.file?.size
        observer.progress = { context.reportProgress(done: $0, total: total) }
        let exchange = context.exchange(
            stage: UploadStage.name, network: signed.network, limiter: limiter, for: item,
            success: prepared.expected.first ?? 200)
        return (try exchange.send(prepared.request, observer: observer), observer)
    }

    /// The `as:` result of a delivered file: status, file bytes sent, content type, and the ETag and Location given.
    private static func result(_ prepared: PreparedUpload, _ response: HTTPResponse) -> JSONValue {
        var result: JSONObject = [
            "status": .int(Int64(response.status)), "bytes": .int(fileBytesSent(prepared, response)),
            "content_type": .string(prepared.contentType),
        ]
        if let etag = response.header("ETag") {
            result["etag"] = .string(etag.trimmingCharacters(in: ["\""]))
        }
        if let location = response.header("Location") {
            result["location"] = .string(Redaction.url(location))
        }
        return .object(result)
    }

    /// The failure of an answer outside `expect`: the request, the status, the attempts and what the server said.
    private static func refusal(_ prepared: PreparedUpload, _ outcome: Exchange.Outcome, said: String?, renewed: Bool)
        -> ItemFailed
    {
        let response = outcome.response
        let attempts = outcome.attempts > 1 ? " after \(outcome.attempts) attempts" : ""
        return ItemFailed(
            stage: UploadStage.name, rule: UploadStage.isExpired(response) ? .expired : .status,
            message: "\(prepared.request.method) \(Redaction.url(prepared.request.url)) answered "
                + "\(ServerMessage.statusLine(response.status))\(attempts)\(said.map { ": \($0)" } ?? "")"
                + (renewed && UploadStage.isExpired(response) ? " (even after renewing the ticket)" : ""),
            expected: prepared.expected.map(String.init).joined(separator: ", "), actual: String(response.status))
    }

    /// The file's bytes among those curl confirmed sent (the form's head and tail left out): the whole file for
    /// any 2xx answer (`HTTPClient` fails one that came early), else what went out before the server answered.
    static func fileBytesSent(_ prepared: PreparedUpload, _ response: HTTPResponse) -> Int64 {
        guard let body = prepared.request.body, let file = body.file else { return 0 }
        return min(file.size, max(0, response.bytesSent - Int64(body.head.count)))
    }

    /// The signed URL or policy expired: the run renews the ticket the URL or fields were rendered from, so they are
    /// re-rendered from a fresh one.
    private func ticketExpired(said: String?) -> TicketExpired {
        let results = TicketExpired.resultNames((signed.url?.variables ?? []) + (formFields?.variables ?? []))
        return TicketExpired(
            stage: UploadStage.name, results: results, what: "the signed URL", said: said ?? "403",
            failure: ItemFailed(
                stage: UploadStage.name, rule: .expired,
                message: "the signed URL expired (\(said ?? "403")) and no earlier request stage made it with `as:`"))
    }
}
