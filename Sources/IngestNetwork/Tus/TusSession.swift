import Foundation
import IngestCore
import IngestFiles
import NativeCurl

/// One file's tus upload (the client of `upload`'s `method: tus`): the requests, the upload URL and the offset the
/// server confirmed. `OPTIONS` tells what the server speaks; a `POST` to the endpoint creates the upload, whose URL
/// goes to the journal at once; `PATCH`es carry the file from the server's offset, and a run cut short resumes the
/// same upload from the offset `HEAD` reports.
package struct TusSession {
    /// The stage the requests and failures are told under (`upload`).
    let stage: String
    let network: NetworkOptions
    /// Bytes per PATCH; nil sends the rest of the file in one.
    let chunkSize: Int64?
    let limiter: RateLimiter?
    let context: StageContext
    let item: Item
    /// The creation endpoint (`url`).
    let endpoint: String
    /// The whole file as validated; each PATCH sends a slice of it, pinned to the same identity.
    let file: HTTPBody.FileSlice
    /// The pipeline's `headers`, rendered: configured for the creation endpoint's origin (`origins`).
    let headers: [(name: String, value: String)]
    let metadata: [(String, String)]
    /// Where `headers` may go: the upload URL the server hands back may name another origin.
    let origins: OriginRule

    private(set) var capabilities = TusCapabilities()
    private(set) var uploadURL: String?
    /// Where this run began sending (the server's offset when it was resumed) and what it sent since.
    private(set) var resumedFrom: Int64 = 0
    private(set) var sent: Int64 = 0

    /// Names the file by its absolute path, as the journal names it (not as the input was typed): a run started
    /// from another folder, or another worker of a shared journal, finds the same upload.
    let journalKey: String

    /// Starts over (404/410 on an upload, or a file changed since it was created) at most this often per file.
    static let maxRestarts = 3
    /// 409s and checksum refusals (460) answered by asking `HEAD` again before the file fails.
    static let maxReconciles = 5

    /// `journalPath` is the file's absolute path as the journal names it (`JournalRecord.canonicalRoot`).
    package init(
        stage: String, network: NetworkOptions, chunkSize: Int64?, limiter: RateLimiter?, context: StageContext,
        item: Item, endpoint: String, file: HTTPBody.FileSlice, journalPath: String,
        headers: [(name: String, value: String)], metadata: [(String, String)]
    ) {
        self.stage = stage
        self.network = network
        self.chunkSize = chunkSize
        self.limiter = limiter
        self.context = context
        self.item = item
        self.endpoint = endpoint
        self.file = file
        self.headers = headers
        self.metadata = metadata
        origins = OriginRule(configuredFor: endpoint, allowing: network.allowOrigins)
        journalKey = TusJournalEntry.key(endpoint: endpoint, path: journalPath)
    }

    /// Uploads the file and returns the `as:` result once the server's offset equals its length.
    package mutating func run() throws -> JSONValue {
        capabilities = discover()
        if let maxSize = capabilities.maxSize, file.size > maxSize {
            throw fail(.maxBytes, "the file (\(file.size) bytes) is larger than the server's Tus-Max-Size \(maxSize)")
        }
        var offset = try resumeOrCreate()
        resumedFrom = offset
        var restarts = 0
        var reconciles = 0
        while offset < file.size {
            let length = min(chunkSize ?? file.size, file.size - offset)
            switch try patch(at: offset, length: length) {
            case .advanced(let next):
                sent += next - offset
                offset = next
                reconciles = 0
            case .mismatch(let said):
                reconciles += 1
                if reconciles > Self.maxReconciles { throw fail(.status, "PATCH kept failing: \(said)") }
                offset = try head(allowGone: false) ?? 0
            case .gone:
                restarts += 1
                if restarts > Self.maxRestarts { throw fail(.status, "the server kept forgetting the upload") }
                offset = try create()
                resumedFrom = 0
            }
        }
        TusJournalEntry.clear(context.journal, key: journalKey)
        return .object([
            "url": .string(Redaction.url(uploadURL ?? "")), "bytes": .int(file.size), "sent": .int(sent),
            "resumed_from": .int(resumedFrom),
        ])
    }

    /// The upload the journal holds for this file when the server still has it (its offset), else a new one.
    private mutating func resumeOrCreate() throws -> Int64 {
        if let entry = TusJournalEntry.read(context.journal, key: journalKey) {
            adopt(entry.url, from: "the journaled upload URL")
            if entry.size == file.size, entry.modified == file.modified {
                if let offset = try head(allowGone: true) {
                    context.logger?.info("tus: resuming \(Redaction.url(entry.url)) at byte \(offset)")
                    return offset
                }
                context.logger?.info("tus: the server no longer has \(Redaction.url(entry.url)); starting over")
            } else {
                terminate()  // the file changed since: the old upload carries another file's bytes
            }
        }
        return try create()
    }

    /// Renders the creation `POST` in a rehearsal (nothing is sent).
    package mutating func rehearse(_ tap: RehearsalTap) throws -> StageOutcome {
        var exchange = makeExchange()
        exchange.rehearsal = tap
        _ = try exchange.send(creationRequest())
        return .proceed
    }

    // MARK: - Requests

    /// The configured headers go only where `origins` permits (the creation endpoint's origin, or `allow_origins`).
    private func request(_ method: String, _ url: String, extra: [(name: String, value: String)] = []) -> HTTPRequest {
        var request = HTTPRequest(
            method: method, url: url,
            headers: origins.headers(headers, for: url) + [("Tus-Resumable", TusHeaders.version)] + extra)
        request.maxResponseBytes = 64 * 1024
        network.apply(to: &request)
        return request
    }

    private func makeExchange() -> Exchange {
        Exchange(
            stage: stage, options: network, limiter: limiter, cancellation: context.cancellation,
            logger: context.logger, timings: context.timings, clock: context.settings.clock)
    }

    /// Takes `url` as the upload's; says (`-v`) when its origin does not get the configured headers.
    private mutating func adopt(_ url: String, from what: String) {
        uploadURL = url
        guard !headers.isEmpty, !origins.permits(url) else { return }
        let names = headers.map(\.name)
        let said = origins.withheld(names, requests: "PATCH, HEAD and DELETE", url: url, handedBackBy: what)
        context.logger?.info(
            "tus: \(said)",
            metadata: ["url": .string(Redaction.url(url)), "withheld": .string(names.joined(separator: ","))])
    }

    /// ` (Authorization was withheld: …)` after a 401 or 403 from an origin the configured headers do not go to.
    fileprivate func withheldHint(_ url: String, status: Int) -> String {
        guard [401, 403].contains(status), !headers.isEmpty, !origins.permits(url) else { return "" }
        return " (\(headers.map(\.name).joined(separator: ", ")) not sent: the upload URL is on another origin, "
            + "\(Origin(of: url)), than url's; allow_origins names origins that get the headers)"
    }

    /// `OPTIONS` on the creation endpoint; a server that does not answer it is taken as core protocol only.
    private func discover() -> TusCapabilities {
        guard let outcome = try? makeExchange().send(request("OPTIONS", endpoint)),
            (200..<300).contains(outcome.response.status)
        else { return TusCapabilities() }
        return TusCapabilities(outcome.response)
    }

    private func creationRequest() -> HTTPRequest {
        var extra: [(name: String, value: String)] = [("Upload-Length", String(file.size))]
        let encoded = TusHeaders.metadata(metadata)
        if !encoded.isEmpty { extra.append(("Upload-Metadata", encoded)) }
        var creation = request("POST", endpoint, extra: extra)
        creation.body = .bytes([])
        return creation
    }

    /// Creates the upload and journals its URL at once; returns offset 0.
    private mutating func create() throws -> Int64 {
        let outcome = try makeExchange().send(creationRequest())
        let response = outcome.response
        guard response.status == 201 else { throw refusal("POST", endpoint, outcome, expected: "201") }
        guard let location = response.header("Location"),
            let url = TusHeaders.uploadURL(location: location, creation: endpoint)
        else { throw fail(.response, "POST \(Redaction.url(endpoint)) answered 201 without a usable Location") }
        adopt(url, from: "the creation answer's Location")
        do {
            try TusJournalEntry(url: url, size: file.size, modified: file.modified)
                .write(context.journal, key: journalKey)
        } catch {
            throw fail(.journal, "the upload URL could not be journaled: \(error)")
        }
        return 0
    }

    /// The server's offset (`HEAD`); nil when it no longer has the upload (404, 410, or 403 as some answer) and
    /// `allowGone`.
    private func head(allowGone: Bool) throws -> Int64? {
        guard let url = uploadURL else { return nil }
        let outcome = try makeExchange().send(request("HEAD", url))
        let status = outcome.response.status
        if [404, 410, 403].contains(status) {
            if allowGone { return nil }
            throw fail(
                .status,
                "HEAD \(Redaction.url(url)) answered \(ServerMessage.statusLine(status))"
                    + withheldHint(url, status: status))
        }
        guard (200..<300).contains(status) else { throw refusal("HEAD", url, outcome, expected: "200 or 204") }
        guard let offset = TusHeaders.offset(outcome.response), offset <= file.size else {
            throw fail(.response, "HEAD \(Redaction.url(url)) gave no usable Upload-Offset")
        }
        return offset
    }

    enum PatchResult {
        case advanced(Int64)
        case mismatch(String)
        case gone
    }
}

extension TusSession {
    /// One `PATCH` of `length` bytes from `offset`, streamed from the file (and checksummed first when the server
    /// takes a checksum).
    fileprivate func patch(at offset: Int64, length: Int64) throws -> PatchResult {
        guard let url = uploadURL else { return .gone }
        var extra: [(name: String, value: String)] = [
            ("Upload-Offset", String(offset)), ("Content-Type", "application/offset+octet-stream"),
        ]
        if let checksum = capabilities.checksum {
            do {
                extra.append(("Upload-Checksum", try checksum.header(path: file.path, offset: offset, length: length)))
            } catch {
                throw fail(.unreadable, "cannot read the file to checksum it: \(error)")
            }
        }
        var piece = file
        piece.offset = offset
        piece.size = length
        piece.fileSize = file.size
        var patch = request("PATCH", url, extra: extra)
        patch.body = HTTPBody(file: piece)
        let observer = DigestObserver(mode: .countOnly)
        let context = context
        let total = file.size
        observer.progress = { context.reportProgress(done: offset + $0, total: total) }
        let outcome = try makeExchange().send(patch, observer: observer)
        let status = outcome.response.status
        switch status {
        case 200..<300:
            guard let next = TusHeaders.offset(outcome.response), next == offset + length else {
                return .mismatch(
                    "PATCH answered \(status) with Upload-Offset "
                        + "\(outcome.response.header("Upload-Offset") ?? "none"), expected \(offset + length)")
            }
            return .advanced(next)
        case 404, 410: return .gone
        case 409, 460: return .mismatch("PATCH answered \(ServerMessage.statusLine(status))")
        default: throw refusal("PATCH", url, outcome, expected: "204")
        }
    }

    /// Ends the upload on the server (`DELETE`, the termination extension) when it offers that, and forgets it.
    package func terminate() {
        if let url = uploadURL, capabilities.terminates {
            let outcome = try? makeExchange().send(request("DELETE", url))
            if let status = outcome?.response.status {
                context.logger?.info("tus: terminated \(Redaction.url(url)): \(status)")
            }
        }
        TusJournalEntry.clear(context.journal, key: journalKey)
    }

    fileprivate func fail(_ rule: RuleName, _ message: String) -> ItemFailed {
        ItemFailed(stage: stage, rule: rule, message: message)
    }

    fileprivate func refusal(_ method: String, _ url: String, _ outcome: Exchange.Outcome, expected: String)
        -> ItemFailed
    {
        let response = outcome.response
        let said = ServerMessage.of(response).map { ": \($0)" } ?? ""
        let attempts = outcome.attempts > 1 ? " after \(outcome.attempts) attempts" : ""
        return ItemFailed(
            stage: stage, rule: .status,
            message: "\(method) \(Redaction.url(url)) answered \(ServerMessage.statusLine(response.status))"
                + "\(attempts)\(said)\(withheldHint(url, status: response.status))",
            expected: expected, actual: String(response.status))
    }
}
