import Foundation
import IngestNative

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
