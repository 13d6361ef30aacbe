import Foundation
import IngestCore
import IngestFiles
import IngestNetwork
import IngestTemplates
import NativeSystem

/// `method: s3`: a SigV4-signed upload straight into a bucket through `S3Uploader` (one PUT, or multipart above the
/// threshold); the key, `metadata` (as `x-amz-meta-*`) and headers are rendered per file.
struct S3Upload: UploadMethod {
    static let name = "s3"
    static let summary = "SigV4-signed upload into `bucket`, multipart for large files"

    let options: Options
    let key: Template
    let uploader: S3Uploader?
    /// Why `method: s3` cannot upload (no credentials or region): `checkReadyToRun` fails `ingest run` with it before
    /// any file is read, while `ingest validate` and `ingest lint`, which send nothing, need no credentials.
    let problem: String?

    init(options: Options, stage: UploadStage.Options) throws {
        self.options = options
        key = try options.key ?? stage.defaultKey()
        do {
            uploader = try S3Uploader(
                stage: UploadStage.name, options: options.client, network: options.network,
                limiter: options.network.rate.map(RateLimiter.init(rate:)))
            problem = nil
        } catch let error as S3UploadConfigurationError {
            uploader = nil
            problem = error.message
        }
    }

    func checkReadyToRun() throws {
        if let problem { throw S3UploadConfigurationError(message: problem) }
    }

    /// Renders key, metadata and headers, then uploads through `S3Uploader` (or rehearses, or finds the object
    /// already stored by a run that was cut short).
    func upload(_ item: Item, scope: TemplateScope, context: StageContext) throws -> StageOutcome {
        guard let s3 = uploader else {
            throw ItemFailed(
                stage: UploadStage.name, rule: .credentials, message: problem ?? "method s3 without an uploader")
        }
        let key = try scope.sanitizedKey(try self.key.render(scope))
        let contentType = try UploadStage.contentType(options.contentType, of: item, scope: scope)
        let headers = try renderedHeaders(scope)
        if let tap = context.rehearsal(for: item, stage: UploadStage.name, success: 200) {
            let result = try s3.rehearse(
                path: item.artifact, key: key, headers: headers, contentType: contentType, tap: tap)
            item.facts[context.resultName ?? UploadStage.name] = result.json
            return .proceed
        }
        if context.mayHaveRunBefore,
            let stored = s3.storedCopy(
                path: item.artifact, key: key, contentType: contentType, cancellation: context.cancellation,
                logger: context.logger, timings: context.timings)
        {
            item.addNote("already uploaded: S3 has s3://\(stored.bucket)/\(key) with this file's size and ETag")
            item.facts[context.resultName ?? UploadStage.name] = stored.json
            return .proceed
        }
        let cached: String? = {
            if case .string(let sha) = item.templateValues["sha256"] { return sha }
            return nil
        }()
        let wantsHash = cached == nil && UploadStage.hashesWhileSending(item, context: context)
        let total = (try? FileStatus(path: item.artifact, followLinks: true))?.size
        // The journal's SHA-256 comes from the pass that reads the file to hash or send it (see S3UploadDigests).
        let result = try s3.resuming(context.uploadJournal).upload(
            path: item.artifact, key: key, headers: headers, contentType: contentType, cachedSHA256: cached,
            fileSHA256: wantsHash, expected: item.validatedArtifact.map(FileStatus.init),
            progress: { context.reportProgress(done: $0, total: total) },
            cancellation: context.cancellation, logger: context.logger, timings: context.timings)
        if wantsHash, let sha256 = result.sha256 {
            item.knownSHA256 = sha256
            item.templateValues["sha256"] = .string(sha256)
        }
        if wantsHash, let identity = result.identity { item.knownIdentity = identity }
        item.facts[context.resultName ?? UploadStage.name] = result.json
        return .proceed
    }

    /// `metadata` as `x-amz-meta-*` headers, then the extra `headers`, rendered.
    private func renderedHeaders(_ scope: TemplateScope) throws -> [(String, String)] {
        var headers: [(String, String)] = []
        for entry in options.metadata.entries {
            let value = try entry.value.render(scope)
            // Header values cannot carry CR/LF; S3 stores metadata as US-ASCII text.
            guard !value.contains(where: { $0.isNewline }), value.allSatisfy(\.isASCII) else {
                throw ItemFailed(
                    stage: UploadStage.name, rule: .metadata,
                    message: "metadata '\(entry.name)' must be one line of ASCII text, found '\(value.prefix(60))'")
            }
            headers.append(("x-amz-meta-" + entry.name.lowercased(), value))
        }
        for entry in options.headers.entries { headers.append((entry.name, try entry.value.render(scope))) }
        return headers
    }
}
