import Crypto
import Foundation
import IngestNative
import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// How an `s3` upload's body is signed.
public enum S3PayloadSigning: String, OptionEnum, Sendable {
    /// `x-amz-content-sha256` is the body's SHA-256 (the file is hashed by streaming before it is sent).
    case signed
    /// `UNSIGNED-PAYLOAD` (one read of the file instead of two; TLS and the part checksums still guard the bytes).
    case unsigned
}

/// The checksum each multipart part carries, checked by S3 before it stores the part.
public enum S3PartChecksum: String, OptionEnum, Sendable {
    /// `Content-MD5` (every S3-compatible store checks it).
    case md5
    /// `x-amz-checksum-sha256` (CreateMultipartUpload announces `x-amz-checksum-algorithm: SHA256`).
    case sha256
}

/// The `upload` options of `method: s3`: a direct, SigV4-signed upload into a bucket the user owns.
public struct S3UploadOptions: Sendable {
    public var bucket: String?
    public var endpoint: String?
    public var pathStyle = false
    public var region: String?
    public var accessKeyID: String?
    public var secretAccessKey: String?
    public var sessionToken: String?
    public var metadata = HeaderTemplates()
    public var partSize = ByteSize(bytes: 8 << 20)
    public var multipartThreshold: ByteSize?
    public var payloadSigning = S3PayloadSigning.signed
    public var checksum = S3PartChecksum.md5
    public var partConcurrency = 4
    public init() {}

    /// S3's limits: parts of 5 MiB … 5 GiB (the last may be smaller), at most 10,000 of them; one PUT ≤ 5 GiB.
    static let minimumPartSize: Int64 = 5 << 20
    static let maximumPartSize: Int64 = 5 << 30
    static let maximumParts: Int64 = 10_000

    static func fields<Root>(_ path: WritableKeyPath<Root, S3UploadOptions>) -> [OptionField<Root>] {
        [
            OptionField("bucket", path.appending(path: \.bucket), doc: "s3: the bucket to upload into."),
            OptionField(
                "endpoint", path.appending(path: \.endpoint),
                doc: "s3: `http(s)://host[:port]` of an S3-compatible store (MinIO, SeaweedFS, R2 …) instead of AWS.",
                default: "https://s3.<region>.amazonaws.com"),
            OptionField(
                "path_style", path.appending(path: \.pathStyle),
                doc: "s3: address the bucket in the path (`host/bucket/key`) instead of the host name.",
                default: "false (true for IP addresses and localhost)"),
            OptionField(
                "region", path.appending(path: \.region), doc: "s3: the region requests are signed for.",
                default: "AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1 when endpoint is given"),
            OptionField(
                "access_key_id", path.appending(path: \.accessKeyID),
                doc:
                    "s3: access key ID (normally `${VAR}`); with `secret_access_key`, used instead of the environment.",
                default: "AWS_ACCESS_KEY_ID"),
            OptionField(
                "secret_access_key", path.appending(path: \.secretAccessKey),
                doc: "s3: secret access key (normally `${VAR}`; never printed).", default: "AWS_SECRET_ACCESS_KEY"),
            OptionField(
                "session_token", path.appending(path: \.sessionToken),
                doc: "s3: session token of temporary credentials that go with `access_key_id`.",
                default: "AWS_SESSION_TOKEN with the environment's keys"),
            OptionField(
                "metadata", path.appending(path: \.metadata),
                doc: "s3: user metadata templates, sent as `x-amz-meta-<name>` headers (`geohash: \"{{geohash}}\"`).",
                default: "{}"),
            OptionField(
                "part_size", path.appending(path: \.partSize),
                doc:
                    "s3: multipart part size, 5MiB–5GiB; raised (to whole MiB) when a file would need more than 10,000 parts.",
                default: "8MiB"),
            OptionField(
                "multipart_threshold", path.appending(path: \.multipartThreshold),
                doc: "s3: files larger than this go by multipart upload; smaller ones as one PUT (at most 5GiB).",
                default: "part_size"),
            OptionField(
                "payload_signing", path.appending(path: \.payloadSigning),
                doc:
                    "s3: `signed` (the body's SHA-256 is signed, hashed by streaming first) or `unsigned` (UNSIGNED-PAYLOAD).",
                default: "signed"),
            OptionField(
                "checksum", path.appending(path: \.checksum),
                doc: "s3: each multipart part's checksum: `md5` (Content-MD5) or `sha256` (x-amz-checksum-sha256).",
                default: "md5"),
            OptionField(
                "part_concurrency", path.appending(path: \.partConcurrency), range: 1...16,
                doc:
                    "s3: multipart parts in flight at once (1–16), each read, hashed and sent by a thread of its own: "
                    + "one part's hashing overlaps another's transfer, and the store works on several at once.",
                default: "4"),
        ]
    }

    /// The options that only `method: s3` reads (named in the error when another method has them).
    var givenNames: [String] {
        var names: [String] = []
        if bucket != nil { names.append("bucket") }
        if endpoint != nil { names.append("endpoint") }
        if region != nil { names.append("region") }
        if accessKeyID != nil { names.append("access_key_id") }
        if secretAccessKey != nil { names.append("secret_access_key") }
        if !metadata.entries.isEmpty { names.append("metadata") }
        if multipartThreshold != nil { names.append("multipart_threshold") }
        if partConcurrency != 4 { names.append("part_concurrency") }
        return names
    }

    func validate(at node: ConfigNode) throws {
        guard let bucket else { throw node.error("method s3 needs 'bucket'") }
        do {
            _ = try S3Location(parsing: "s3://\(bucket)/")
        } catch let error as S3Error {
            throw node.error("bucket: \(error)")
        }
        if let endpoint {
            do { _ = try S3Endpoint(region: "us-east-1", url: endpoint) } catch {
                throw node.error("endpoint: \(error)")
            }
        }
        if (accessKeyID == nil) != (secretAccessKey == nil) {
            throw node.error("give both 'access_key_id' and 'secret_access_key', or neither (to use the environment)")
        }
        if partSize.bytes < Self.minimumPartSize || partSize.bytes > Self.maximumPartSize {
            throw node.error("part_size must be between 5MiB and 5GiB (S3's limits), found \(partSize)")
        }
        if let threshold = multipartThreshold, threshold.bytes > Self.maximumPartSize {
            throw node.error("multipart_threshold must be at most 5GiB (S3's limit for one PUT), found \(threshold)")
        }
        if !(1...16).contains(partConcurrency) {
            throw node.error("part_concurrency must be between 1 and 16, found \(partConcurrency)")
        }
    }

    /// Credentials and region from the pipeline, else the environment; the error names what to set.
    func resolve(environment: [String: String]) throws -> (AWSCredentials, String) {
        let credentials: AWSCredentials
        if let accessKeyID, let secretAccessKey {
            let missing = [
                accessKeyID.isEmpty ? "access_key_id" : nil, secretAccessKey.isEmpty ? "secret_access_key" : nil,
            ]
            .compactMap { $0 }
            guard missing.isEmpty else {
                throw S3UploadConfigurationError(
                    message: "missing AWS credentials: \(missing.joined(separator: " and ")) rendered empty")
            }
            credentials = AWSCredentials(
                accessKeyID: accessKeyID, secretAccessKey: secretAccessKey,
                sessionToken: sessionToken)  // the environment's token belongs to the environment's keys
        } else {
            do {
                credentials = try AWSCredentials.fromEnvironment(environment)
            } catch let error as S3Error {
                throw S3UploadConfigurationError(
                    message: "\(error), or give access_key_id and secret_access_key in the pipeline")
            }
            if let sessionToken, !sessionToken.isEmpty {
                return (
                    AWSCredentials(
                        accessKeyID: credentials.accessKeyID, secretAccessKey: credentials.secretAccessKey,
                        sessionToken: sessionToken), try resolveRegion(environment)
                )
            }
        }
        return (credentials, try resolveRegion(environment))
    }

    private func resolveRegion(_ environment: [String: String]) throws -> String {
        if let region, !region.isEmpty { return region }
        if let found = try? AWSCredentials.region(from: environment) { return found }
        if endpoint != nil { return "us-east-1" }
        throw S3UploadConfigurationError(
            message: "missing AWS region: set AWS_REGION (or AWS_DEFAULT_REGION), or give 'region'")
    }
}

/// A configuration problem found when the stage is built (the pipeline fails to load, nothing is uploaded).
struct S3UploadConfigurationError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// What one `s3` upload produced (the stage's `as:` result).
struct S3UploadResult: Sendable {
    var bucket: String
    var key: String
    var etag: String
    var size: Int64
    /// 0 for a single PUT, else the number of multipart parts.
    var parts: Int
    var location: String
    var contentType: String
    /// The whole file's SHA-256 when the upload computed it on its way (`fileSHA256`), for the journal.
    var sha256: String? = nil

    var json: JSONValue {
        [
            "bucket": .string(bucket), "key": .string(key), "etag": .string(etag), "size": .int(size),
            "parts": .int(Int64(parts)), "location": .string(location), "content_type": .string(contentType),
        ]
    }
}

/// Uploads files into one bucket with SigV4-signed requests: one PUT up to the threshold, S3 multipart upload above
/// it (every part streamed from disk as a slice of the file, never held in memory, each with its own checksum and
/// signed SHA-256; retried alone by `Exchange`); a failed multipart upload is aborted so no parts stay behind.
struct S3Uploader: Sendable {
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
    /// The run's cancellation, set per upload (`upload(…, cancellation:)`): parts in flight are cancelled with it.
    private(set) var cancellation: RunCancellation?
    /// The run's `-v` logger, set per upload like `cancellation`.
    private var logger: Logger?
    private var timings: FileTimings?
    /// The signing time of each attempt (tests move it).
    var clock: @Sendable () -> Date = { Date() }

    init(
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

    private func fail(_ rule: String, _ message: String) -> ItemFailed {
        ItemFailed(stage: stage, rule: rule, message: message)
    }

    /// Uploads `path` under `key`. `headers` (Content-Type, x-amz-meta-*, extras) go on the PUT or on
    /// CreateMultipartUpload. `cachedSHA256` is the file's hash when an earlier stage already computed it;
    /// `fileSHA256` asks for it in the result (the journal's), computed in the pass that reads the file to hash or
    /// send it, never by a read of its own.
    func upload(
        path: String, key: String, headers: [(String, String)], contentType: String, cachedSHA256: String? = nil,
        fileSHA256: Bool = false, progress: ((Int64) -> Void)? = nil, cancellation: RunCancellation? = nil,
        logger: Logger? = nil, timings: FileTimings? = nil
    ) throws -> S3UploadResult {
        var uploader = self
        uploader.cancellation = cancellation
        uploader.logger = logger
        uploader.timings = timings
        return try uploader.uploadFile(
            path: path, key: key, headers: headers, contentType: contentType, cachedSHA256: cachedSHA256,
            fileSHA256: fileSHA256 && cachedSHA256 == nil, progress: progress)
    }

    private func uploadFile(
        path: String, key: String, headers: [(String, String)], contentType: String, cachedSHA256: String?,
        fileSHA256: Bool, progress: ((Int64) -> Void)?
    ) throws -> S3UploadResult {
        let status: FileStatus
        do {
            status = try FileStatus(path: path, followLinks: true)
        } catch {
            throw fail("unreadable", "cannot read the file to upload: \(error)")
        }
        let location = S3Location(bucket: bucket, key: key)
        let url = endpoint.objectURL(location)
        let headers = [("Content-Type", contentType)] + headers
        if status.size <= threshold {
            let (etag, sha256) = try putObject(
                path: path, status: status, url: url, headers: headers, cachedSHA256: cachedSHA256,
                fileSHA256: fileSHA256, progress: progress)
            return S3UploadResult(
                bucket: bucket, key: key, etag: etag, size: status.size, parts: 0, location: url,
                contentType: contentType, sha256: sha256)
        }
        let fileHash = fileSHA256 ? PartOrderedSHA256(parts: partLayout(fileSize: status.size).count) : nil
        let (etag, parts) = try multipartUpload(
            path: path, status: status, url: url, headers: headers, fileHash: fileHash, progress: progress)
        return S3UploadResult(
            bucket: bucket, key: key, etag: etag, size: status.size, parts: parts, location: url,
            contentType: contentType, sha256: fileHash?.sha256Hex)
    }

    // MARK: - Requests

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
            cancellation: cancellable ? cancellation : nil, logger: logger, timings: timings)
        let outcome = try exchange.send(observer: observer) { _ in
            let signature = signer.signHeaders(unsigned, date: clock())
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
            stage: stage, rule: code == "SignatureDoesNotMatch" || response.status == 403 ? "denied" : "status",
            message: "\(what) answered \(ServerMessage.statusLine(response.status))\(after)\(said)",
            expected: "200", actual: String(response.status))
    }

    /// One PUT; returns the ETag and, when `fileSHA256`, the file's SHA-256. Signed, the signature needs the
    /// SHA-256 before the first byte goes out: one pass hashes it and the ETag's MD5 (it is also the journal's hash,
    /// and S3 checks it against the bytes it receives). Unsigned, both ride along while the file is sent.
    private func putObject(
        path: String, status: FileStatus, url: String, headers: [(String, String)], cachedSHA256: String?,
        fileSHA256: Bool, progress: ((Int64) -> Void)?
    ) throws -> (etag: String, sha256: String?) {
        // The body records the size and mtime now: a file changed while it is hashed or sent fails the transfer.
        let body = HTTPBody(file: HTTPBody.FileSlice(path: path, size: status.size, modified: status.modified))
        let payload: SigV4Payload
        let observer: DigestObserver
        var hashed: SliceDigest?
        switch payloadSigning {
        case .unsigned:
            payload = .unsigned
            observer = DigestObserver(sha256: fileSHA256, md5: true, mode: .background)
        case .signed:
            let digest = try hashSlice(body.file!, sha256: cachedSHA256 == nil, md5: true)
            payload = .sha256(cachedSHA256 ?? digest.sha256)
            hashed = digest
            observer = DigestObserver(mode: .countOnly)
        }
        observer.progress = progress
        let (response, attempts) = try send(
            "PUT", url, headers: headers, payload: payload, body: body, observer: observer)
        guard response.status == 200 else { throw refused("PUT \(Redaction.url(url))", response, attempts: attempts) }
        if let hashed {
            let etag = try checkedETag(response, md5: hashed.md5, what: "PUT \(Redaction.url(url))")
            return (etag.trimmingCharacters(in: ["\""]), fileSHA256 ? hashed.sha256 : nil)
        }
        // Curl confirmed every byte sent, so the observer saw the whole file since the last rewind.
        guard observer.count == status.size else {
            throw fail("changed", "PUT \(Redaction.url(url)) sent \(observer.count) of \(status.size) bytes")
        }
        let digest = observer.finish()
        let etag = try checkedETag(response, md5: digest.md5, what: "PUT \(Redaction.url(url))")
        return (etag.trimmingCharacters(in: ["\""]), fileSHA256 ? digest.sha256Hex : nil)
    }

    /// CreateMultipartUpload → UploadPart × n → CompleteMultipartUpload; AbortMultipartUpload on any failure.
    private func multipartUpload(
        path: String, status: FileStatus, url: String, headers: [(String, String)], fileHash: PartOrderedSHA256?,
        progress: ((Int64) -> Void)?
    ) throws -> (etag: String, parts: Int) {
        let (size, count) = partLayout(fileSize: status.size)

        var createHeaders = headers
        if checksum == .sha256 { createHeaders.append(("x-amz-checksum-algorithm", "SHA256")) }
        let (created, createAttempts) = try send("POST", url + "?uploads", headers: createHeaders, body: .bytes([]))
        guard created.status == 200,
            let uploadID = XMLText.element("UploadId", in: created.bodyText), !uploadID.isEmpty
        else {
            if created.status == 200 {
                throw fail("status", "CreateMultipartUpload \(Redaction.url(url)) answered without an UploadId")
            }
            throw refused("CreateMultipartUpload \(Redaction.url(url))", created, attempts: createAttempts)
        }
        let uploadQuery = "uploadId=" + AWSURI.encode(uploadID)
        do {
            // `partConcurrency` threads take the parts in order, each reading, hashing and sending its part; the
            // first failure stops them taking more, and the upload is aborted below.
            let parts = PartQueue(count: count)
            let sent = SentBytes()
            let sendPart = { (index: Int) throws -> (etag: String, checksum: String?) in
                try self.uploadPart(
                    index, of: count, size: size, path: path, status: status, url: url, uploadQuery: uploadQuery,
                    fileHash: fileHash, progress: progress.map { report in { sent.set(index, $0, report: report) } })
            }
            let workers = min(partConcurrency, count)
            let finished = DispatchGroup()
            for _ in 0..<workers {
                finished.enter()
                let thread = Thread {
                    defer { finished.leave() }
                    while let index = parts.next() {
                        do {
                            parts.store(index, try sendPart(index))
                        } catch {
                            parts.fail(error)
                            fileHash?.giveUp()  // no thread may wait for this part's turn
                            return
                        }
                    }
                }
                thread.name = "ingest-s3-part"
                thread.start()
            }
            finished.wait()
            if let error = parts.failure { throw error }
            let completed = parts.results.enumerated().map {
                (number: $0.offset + 1, etag: $0.element.etag, checksum: $0.element.checksum)
            }
            // The last part's read checked size and mtime; check once more before S3 assembles the object.
            if let now = try? FileStatus(path: path, followLinks: true),
                now.size != status.size || now.modified != status.modified
            {
                throw fail("changed", "the file changed while it was being uploaded; the multipart upload was aborted")
            }
            var xml = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
            for part in completed {
                xml += "<Part><PartNumber>\(part.number)</PartNumber><ETag>\(XMLText.escaped(part.etag))</ETag>"
                if let sum = part.checksum { xml += "<ChecksumSHA256>\(sum)</ChecksumSHA256>" }
                xml += "</Part>"
            }
            xml += "</CompleteMultipartUpload>"
            let bytes = Array(xml.utf8)
            let (response, attempts) = try send(
                "POST", "\(url)?\(uploadQuery)", headers: [("Content-Type", "application/xml")],
                payload: .hashing(bytes), body: .bytes(bytes))
            // S3 may answer 200 and still put an <Error> in the body (a failure after the headers went out).
            guard response.status == 200, !response.bodyText.contains("<Error>") else {
                throw refused("CompleteMultipartUpload \(Redaction.url(url))", response, attempts: attempts)
            }
            let etag = XMLText.element("ETag", in: response.bodyText) ?? response.header("ETag") ?? ""
            return (etag.trimmingCharacters(in: ["\""]), count)
        } catch {
            let aborted = abort(url: url, uploadQuery: uploadQuery)
            guard var failed = error as? ItemFailed else { throw error }
            if let index = failed.failures.indices.first {
                failed.failures[index].message += aborted
            }
            throw failed
        }
    }

    /// The part size and count of a multipart upload of `fileSize` bytes: `part_size`, raised to whole MiB when
    /// the file would need more than 10,000 parts.
    func partLayout(fileSize: Int64) -> (size: Int64, count: Int) {
        var size = partSize
        let needed = (fileSize + Self.maximumPartsMinusOne) / S3UploadOptions.maximumParts
        if needed > size { size = (needed + (1 << 20) - 1) / (1 << 20) * (1 << 20) }
        return (size, Int((fileSize + size - 1) / size))
    }

    /// Part `index` (0-based) of a file cut into parts of `size` bytes: a slice read from disk, which fails the
    /// transfer when the file no longer has the size and mtime of `status`.
    static func partSlice(_ index: Int, size: Int64, path: String, status: FileStatus) -> HTTPBody.FileSlice {
        let offset = Int64(index) * size
        return HTTPBody.FileSlice(
            path: path, offset: offset, length: min(size, status.size - offset), fileSize: status.size,
            modified: status.modified)
    }

    /// The object this upload would store, when S3 already holds it: after a run was cut short mid-upload (killed
    /// after S3 stored the object but before the journal heard of it), a HEAD proves the upload done instead of
    /// sending the file again. Proof is the file's size and the ETag this upload produces: the MD5 of the file for
    /// a single PUT, or S3's MD5 of the parts' MD5s, "-" and the part count, for a multipart upload (the file is
    /// read once to compute it, which costs far less than sending it). Anything else (no object, another size or
    /// ETag, an encrypted object whose ETag is no MD5, a failed HEAD) is no proof: nil, and the file is uploaded.
    func storedCopy(
        path: String, key: String, contentType: String, cancellation: RunCancellation? = nil, logger: Logger? = nil,
        timings: FileTimings? = nil
    ) -> S3UploadResult? {
        var uploader = self
        uploader.cancellation = cancellation
        uploader.logger = logger
        uploader.timings = timings
        guard let status = try? FileStatus(path: path, followLinks: true) else { return nil }
        let url = endpoint.objectURL(S3Location(bucket: bucket, key: key))
        guard let (response, _) = try? uploader.send("HEAD", url), response.status == 200,
            response.header("Content-Length").flatMap(Int64.init) == status.size,
            let etag = response.header("ETag")?.trimmingCharacters(in: ["\""]).lowercased()
        else { return nil }
        var parts = 0
        let expected: String
        do {
            if status.size <= threshold {
                let whole = HTTPBody.FileSlice(path: path, size: status.size, modified: status.modified)
                expected = try uploader.hashSlice(whole, sha256: false, md5: true).md5.hexString
            } else {
                let (size, count) = partLayout(fileSize: status.size)
                var digests: [UInt8] = []
                for index in 0..<count {
                    let slice = Self.partSlice(index, size: size, path: path, status: status)
                    digests += try uploader.hashSlice(slice, sha256: false, md5: true).md5
                }
                expected = Array(Insecure.MD5.hash(data: digests)).hexString + "-\(count)"
                parts = count
            }
        } catch {
            return nil
        }
        guard etag == expected else { return nil }
        return S3UploadResult(
            bucket: bucket, key: key, etag: etag, size: status.size, parts: parts, location: url,
            contentType: response.header("Content-Type") ?? contentType)
    }

    /// Reads, hashes and sends part `index` (0-based) of a multipart upload; returns its ETag and checksum.
    private func uploadPart(
        _ index: Int, of count: Int, size: Int64, path: String, status: FileStatus, url: String, uploadQuery: String,
        fileHash: PartOrderedSHA256?, progress: ((Int64) -> Void)?
    ) throws -> (etag: String, checksum: String?) {
        if let cancellation, cancellation.isCancelled {
            throw ItemFailed.interrupted(
                stage: stage, reason: cancellation.reason, during: "the multipart upload of \(Redaction.url(url))")
        }
        let number = index + 1
        let offset = Int64(index) * size
        let slice = Self.partSlice(index, size: size, path: path, status: status)
        let sha256 = checksum == .sha256 || payloadSigning == .signed
        let digest =
            try fileHash?.inTurn(index) { feed in
                try hashSlice(slice, sha256: sha256, md5: checksum == .md5, feed: feed)
            } ?? hashSlice(slice, sha256: sha256, md5: checksum == .md5)
        var partHeaders: [(String, String)] = []
        var partChecksum: String?
        switch checksum {
        case .md5: partHeaders.append(("Content-MD5", digest.md5Base64))
        case .sha256:
            partChecksum = digest.sha256Base64
            partHeaders.append(("x-amz-checksum-sha256", digest.sha256Base64))
        }
        let payload: SigV4Payload = payloadSigning == .signed ? .sha256(digest.sha256) : .unsigned
        let partURL = "\(url)?partNumber=\(number)&\(uploadQuery)"
        let (response, attempts) = try send(
            "PUT", partURL, headers: partHeaders, payload: payload, body: HTTPBody(file: slice),
            observer: progress.map { ProgressObserver($0) })
        let what = "UploadPart \(number) of \(count) for \(Redaction.url(url))"
        guard response.status == 200 else { throw refused(what, response, attempts: attempts) }
        let etag = try checkedETag(response, md5: checksum == .md5 ? digest.md5 : nil, what: what)
        try afterPart?(number)
        return (etag, partChecksum)
    }

    /// The parts of one multipart upload, handed out in order to the threads that send them; keeps each part's
    /// result and the first failure (after which no part is handed out).
    final class PartQueue: @unchecked Sendable {
        private let lock = NSLock()
        private var nextIndex = 0
        private let count: Int
        private var stored: [(etag: String, checksum: String?)?]
        private var firstFailure: Error?

        init(count: Int) {
            self.count = count
            stored = Array(repeating: nil, count: count)
        }

        func next() -> Int? {
            lock.withLock {
                guard firstFailure == nil, nextIndex < count else { return nil }
                defer { nextIndex += 1 }
                return nextIndex
            }
        }

        func store(_ index: Int, _ result: (etag: String, checksum: String?)) {
            lock.withLock { stored[index] = result }
        }

        func fail(_ error: Error) { lock.withLock { if firstFailure == nil { firstFailure = error } } }

        var failure: Error? { lock.withLock { firstFailure } }
        /// Every part's result, in part order (call once all parts are stored).
        var results: [(etag: String, checksum: String?)] { lock.withLock { stored.compactMap { $0 } } }
    }

    /// Bytes sent of a multipart upload, the parts in flight together: what the progress display shows.
    final class SentBytes: @unchecked Sendable {
        private let lock = NSLock()
        private var perPart: [Int: Int64] = [:]
        private var total: Int64 = 0

        func set(_ part: Int, _ bytes: Int64, report: (Int64) -> Void) {
            let now = lock.withLock { () -> Int64 in
                total += bytes - (perPart[part] ?? 0)
                perPart[part] = bytes
                return total
            }
            report(now)
        }
    }

    /// Reports the bytes of one part sent so far (restarting with a retried part).
    final class ProgressObserver: HTTPBodyObserver {
        let report: (Int64) -> Void
        var count: Int64 = 0
        init(_ report: @escaping (Int64) -> Void) { self.report = report }
        func restart() { count = 0 }
        func consume(_ bytes: UnsafeRawBufferPointer) {
            count += Int64(bytes.count)
            report(count)
        }
    }

    private static let maximumPartsMinusOne = S3UploadOptions.maximumParts - 1

    /// AbortMultipartUpload (S3 frees the stored parts); returns a note for the failure message.
    private func abort(url: String, uploadQuery: String) -> String {
        do {
            let (response, _) = try send("DELETE", "\(url)?\(uploadQuery)", cancellable: false)
            if response.status == 204 || response.status == 200 || response.status == 404 {
                return " (multipart upload aborted)"
            }
            return " (aborting the multipart upload answered \(response.status): it may still hold parts)"
        } catch {
            return " (aborting the multipart upload failed: \(error))"
        }
    }
}

extension UploadStage {
    /// `method: s3`: renders key, metadata and headers, then uploads through `S3Uploader`.
    func uploadToS3(_ item: Item, scope: TemplateScope, context: StageContext) throws -> StageOutcome {
        guard let s3 else {
            throw ItemFailed(
                stage: Self.name, rule: "credentials", message: s3Problem ?? "method s3 without an uploader")
        }
        let key = try scope.sanitizedKey(try (options.key ?? Template("{{artifact.path}}")).render(scope))
        let contentType = try options.contentType?.render(scope) ?? Self.sniffedType(item.artifact)
        var headers: [(String, String)] = []
        for entry in options.s3.metadata.entries {
            let value = try entry.value.render(scope)
            // Header values cannot carry CR/LF; S3 stores metadata as US-ASCII text.
            guard !value.contains(where: { $0.isNewline }), value.allSatisfy(\.isASCII) else {
                throw ItemFailed(
                    stage: Self.name, rule: "metadata",
                    message: "metadata '\(entry.name)' must be one line of ASCII text, found '\(value.prefix(60))'")
            }
            headers.append(("x-amz-meta-" + entry.name.lowercased(), value))
        }
        for entry in options.headers.entries { headers.append((entry.name, try entry.value.render(scope))) }
        if let tap = context.rehearsal(for: item, stage: Self.name, success: 200) {
            let result = try s3.rehearse(
                path: item.artifact, key: key, headers: headers, contentType: contentType, tap: tap)
            item.facts[context.resultName ?? Self.name] = result.json
            return .proceed
        }
        if context.mayHaveRunBefore,
            let stored = s3.storedCopy(
                path: item.artifact, key: key, contentType: contentType, cancellation: context.cancellation,
                logger: context.logger, timings: context.timings)
        {
            item.addNote("already uploaded: S3 has s3://\(stored.bucket)/\(key) with this file's size and ETag")
            item.facts[context.resultName ?? Self.name] = stored.json
            return .proceed
        }
        let cached: String? = {
            if case .string(let sha) = item.templateValues["sha256"] { return sha }
            return nil
        }()
        let wantsHash = cached == nil && UploadStage.hashesWhileSending(item, context: context)
        let total = (try? FileStatus(path: item.artifact, followLinks: true))?.size
        // The journal's SHA-256 comes from the pass that reads the file to hash or send it (see S3UploadDigests).
        let result = try s3.upload(
            path: item.artifact, key: key, headers: headers, contentType: contentType, cachedSHA256: cached,
            fileSHA256: wantsHash, progress: { context.reportProgress(done: $0, total: total) },
            cancellation: context.cancellation, logger: context.logger, timings: context.timings)
        if wantsHash, let sha256 = result.sha256 {
            item.knownSHA256 = sha256
            item.templateValues["sha256"] = .string(sha256)
        }
        item.facts[context.resultName ?? Self.name] = result.json
        return .proceed
    }
}
