import Foundation
import IngestCore
import Logging
import NativeCurl
import NativeSystem

/// What one `s3` upload produced (the stage's `as:` result).
package struct S3UploadResult: Sendable {
    package var bucket: String
    var key: String
    var etag: String
    var size: Int64
    /// 0 for a single PUT, else the number of multipart parts.
    var parts: Int
    var location: String
    var contentType: String
    /// The whole file's SHA-256 when the upload computed it on its way (`fileSHA256`), for the journal.
    package var sha256: String? = nil
    /// The whole file's XXH3-128 identity (`xxh3-128:…`) when the upload took it on its way instead of a SHA-256.
    package var identity: String? = nil

    package var json: JSONValue {
        [
            "bucket": .string(bucket), "key": .string(key), "etag": .string(etag), "size": .int(size),
            "parts": .int(Int64(parts)), "location": .string(location), "content_type": .string(contentType),
        ]
    }
}

/// Uploads files into one bucket with SigV4-signed requests: one PUT up to the threshold, S3 multipart upload above
/// it (every part streamed from disk as a slice of the file, never held in memory, each with its own checksum and
/// signed SHA-256; retried alone by `Exchange`); a failed multipart upload is aborted so no parts stay behind.
package struct S3Uploader: Sendable {
    let stage: String
    let signer: SigV4Signer
    let endpoint: S3Endpoint
    let bucket: String
    let partSize: Int64
    let threshold: Int64
    let payloadSigning: S3PayloadSigning
    let checksum: S3PartChecksum
    /// Parts in flight at once.
    var partConcurrency: Int
    let network: NetworkOptions
    let limiter: RateLimiter?
    /// Called after each part is stored (tests use it to change the file in the middle of an upload).
    var afterPart: (@Sendable (Int) throws -> Void)?
    /// Changes the `x-amz-checksum-*` value sent (tests send a wrong one, to see a store reject or ignore it).
    var alterChecksum: (@Sendable (String) -> String)?
    /// The run's cancellation, set per upload (`upload(…, cancellation:)`): parts in flight are cancelled with it.
    private(set) var cancellation: RunCancellation?
    /// The run's `-v` logger, set per upload like `cancellation`.
    private(set) var logger: Logger?
    private(set) var timings: FileTimings?
    /// The run's clock: each attempt's signing time, and every wait of the requests (a retry's backoff, a
    /// `Retry-After`). Set per upload from the file's `timings`, which carry the run's clock; tests set it.
    var clock: any WaitClock = SystemClock()
    /// Where a multipart upload is journaled so a later run resumes it (`resuming(_:)`); nil keeps none.
    var uploadJournal: UploadJournal?
    /// Parts per ListParts page when an upload is resumed (S3's maximum; tests page with fewer).
    var listPartsPageSize = 1000

    package init(
        stage: String, options: S3UploadOptions, network: NetworkOptions, limiter: RateLimiter?,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws {
        let (credentials, region) = try options.resolve(environment: environment)
        self.stage = stage
        signer = .s3(credentials: credentials, region: region)
        endpoint = try S3Endpoint(region: region, url: options.endpoint, pathStyle: options.pathStyle)
        bucket = options.bucket ?? ""
        partSize = options.partSize.bytes
        threshold = options.multipartThreshold?.bytes ?? options.partSize.bytes
        payloadSigning = options.payloadSigning
        checksum = options.checksum
        partConcurrency = options.partConcurrency
        self.network = network
        self.limiter = limiter
    }

    func fail(_ rule: RuleName, _ message: String) -> ItemFailed {
        ItemFailed(stage: stage, rule: rule, message: message)
    }

    /// Uploads `path` under `key`. `headers` (Content-Type, x-amz-meta-*, extras) go on the PUT or on
    /// CreateMultipartUpload. `cachedSHA256` is the file's hash when an earlier stage already computed it;
    /// `fileSHA256` asks for it in the result (the journal's), computed in the pass that reads the file to hash or
    /// send it, never by a read of its own.
    package func upload(
        path: String, key: String, headers: [(String, String)], contentType: String, cachedSHA256: String? = nil,
        fileSHA256: Bool = false, expected: FileStatus? = nil, progress: (@Sendable (Int64) -> Void)? = nil,
        cancellation: RunCancellation? = nil, logger: Logger? = nil, timings: FileTimings? = nil
    ) throws -> S3UploadResult {
        try with(cancellation: cancellation, logger: logger, timings: timings).uploadFile(
            path: path, key: key, headers: headers, contentType: contentType, cachedSHA256: cachedSHA256,
            fileSHA256: fileSHA256 && cachedSHA256 == nil, expected: expected, progress: progress)
    }

    /// This uploader with one upload's cancellation, `-v` logger and report timings.
    func with(cancellation: RunCancellation?, logger: Logger?, timings: FileTimings?) -> S3Uploader {
        var uploader = self
        uploader.cancellation = cancellation
        uploader.logger = logger
        uploader.timings = timings
        if let timings { uploader.clock = timings.clock }
        return uploader
    }

    private func uploadFile(
        path: String, key: String, headers: [(String, String)], contentType: String, cachedSHA256: String?,
        fileSHA256: Bool, expected: FileStatus?, progress: (@Sendable (Int64) -> Void)?
    ) throws -> S3UploadResult {
        let status: FileStatus
        do {
            status = try FileStatus(path: path, followLinks: true)
        } catch {
            throw fail(.unreadable, "cannot read the file to upload: \(error)")
        }
        // Every slice below is pinned to `status`; it must be the file as validated.
        if let expected, let change = status.change(since: expected) {
            throw fail(.changed, "the file changed since it was validated (\(change)); nothing of it was sent")
        }
        let location = S3Location(bucket: bucket, key: key)
        let url = endpoint.objectURL(location)
        let headers = [("Content-Type", contentType)] + headers
        if status.size <= threshold {
            let put = try putObject(
                path: path, status: status, url: url, headers: headers, cachedSHA256: cachedSHA256,
                fileSHA256: fileSHA256, progress: progress)
            return S3UploadResult(
                bucket: bucket, key: key, etag: put.etag, size: status.size, parts: 0, location: url,
                contentType: contentType, sha256: put.sha256, identity: put.identity)
        }
        // The journal's identity is XXH3-128, fed in part order by the pass that hashes the parts anyway.
        let fileHash =
            fileSHA256 ? PartOrderedSHA256(parts: partLayout(fileSize: status.size).count, identity: true) : nil
        let (etag, parts) = try multipartUpload(
            path: path, key: key, status: status, url: url, headers: headers, fileHash: fileHash, progress: progress)
        return S3UploadResult(
            bucket: bucket, key: key, etag: etag, size: status.size, parts: parts, location: url,
            contentType: contentType, identity: fileHash?.identity)
    }

    /// Sends one request through the retrying `Exchange`, signed anew for every attempt (S3 refuses a signature
    /// dated more than 15 minutes off, and a retry may come after a long `Retry-After`); returns the final response.
    /// `cancellable: false` is for the AbortMultipartUpload a cancelled run still owes S3 (no rate wait, 30 s).
    func send(
        _ method: String, _ url: String, headers: [(String, String)] = [], payload: SigV4Payload = .empty,
        body: HTTPBody? = nil, observer: HTTPBodyObserver? = nil, cancellable: Bool = true
    ) throws -> (response: HTTPResponse, attempts: Int) {
        let unsigned = try SigV4Request(method: method, url: url, headers: headers, payload: payload)
        var options = network
        if !cancellable { options.maxAttempts = min(options.maxAttempts, 2) }
        let exchange = Exchange(
            stage: stage, options: options, limiter: cancellable ? limiter : nil,
            cancellation: cancellable ? cancellation : nil, logger: logger, timings: timings, clock: clock)
        let outcome = try exchange.send(observer: observer) { _ in
            let signature = signer.signHeaders(unsigned, date: clock.date)
            var request = HTTPRequest(
                method: method, url: url, headers: (headers + signature.headers).map { (name: $0.0, value: $0.1) },
                body: body)
            request.maxResponseBytes = 64 * 1024
            network.apply(to: &request)
            if !cancellable { request.timeout = 30 }
            return request
        }
        return (outcome.response, outcome.attempts)
    }

    /// A failure naming the request (without query signatures) and S3's `Code: Message`.
    func refused(_ what: String, _ response: HTTPResponse, attempts: Int) -> ItemFailed {
        let said = ServerMessage.of(response).map { ": \($0)" } ?? ""
        let after = attempts > 1 ? " after \(attempts) attempts" : ""
        let code = XMLText.element("Code", in: response.bodyText)
        return ItemFailed(
            stage: stage, rule: code == "SignatureDoesNotMatch" || response.status == 403 ? .denied : .status,
            message: "\(what) answered \(ServerMessage.statusLine(response.status))\(after)\(said)",
            expected: "200", actual: String(response.status))
    }
}
