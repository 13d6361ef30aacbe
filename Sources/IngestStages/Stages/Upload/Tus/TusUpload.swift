import Foundation
import IngestCore
import IngestNetwork
import IngestTemplates
import NativeCurl

/// `method: tus`: a resumable upload by the tus 1.0 protocol (tus.io). `OPTIONS` tells what the server speaks; a
/// `POST` to `url` creates the upload (`Upload-Length`, `Upload-Metadata` with filename and filetype), whose URL
/// goes to the journal at once; `PATCH`es carry the file from the server's offset (streamed, in `chunk_size`
/// pieces or one), each with `Upload-Checksum` when the server takes one. A run killed at any point, or a cut
/// PATCH, resumes the same upload from the offset `HEAD` reports; an upload the server forgot (404/410) starts
/// over, an offset mismatch (409) asks `HEAD` again. Done means the server's offset equals the file's length.
/// A file that fails for good (not a network failure, which the next run resumes) has its upload terminated
/// (`DELETE`) when the server offers termination.
struct TusUpload: UploadMethod {
    let options: UploadStage.Options
    let limiter: RateLimiter?

    /// Starts over (404/410 on an upload, or a file changed since it was created) at most this often per file.
    static let maxRestarts = 3
    /// 409s and checksum refusals (460) answered by asking `HEAD` again before the file fails.
    static let maxReconciles = 5

    func upload(_ item: Item, scope: TemplateScope, context: StageContext) throws -> StageOutcome {
        guard let urlTemplate = options.url else {
            throw ItemFailed(stage: UploadStage.name, rule: .url, message: "method tus needs 'url'")
        }
        let endpoint = try urlTemplate.renderURL(scope)
        let whole: HTTPBody.FileSlice
        do {
            whole = try item.sendableSlice()
        } catch {
            throw ItemFailed(
                stage: UploadStage.name, rule: .unreadable, message: "cannot read the file to upload: \(error)")
        }
        var session = TusSession(
            options: options, limiter: limiter, context: context, item: item, endpoint: endpoint, file: whole,
            headers: try options.headers.entries.map { (name: $0.name, value: try $0.value.render(scope)) },
            metadata: try metadata(item, scope: scope))
        if let tap = context.rehearsal(for: item, stage: UploadStage.name, success: 201) {
            return try session.rehearse(tap)
        }
        do {
            let result = try session.run()
            if let name = context.resultName { item.facts[name] = result }
            return .proceed
        } catch let failed as ItemFailed {
            if Self.failsForGood(failed) { session.terminate() }
            throw failed
        }
    }

    /// `filename` and `filetype` by default, then the pipeline's `metadata` entries (which may replace them).
    private func metadata(_ item: Item, scope: TemplateScope) throws -> [(String, String)] {
        var pairs: [(String, String)] = [
            ("filename", (item.relativePath as NSString).lastPathComponent),
            ("filetype", try options.renderedContentType(item, scope: scope)),
        ]
        for entry in options.s3.metadata.entries {
            let value = try entry.value.render(scope)
            pairs.removeAll { $0.0 == entry.name }
            pairs.append((entry.name, value))
        }
        return pairs
    }

    /// A failure the next run would not mend by resuming: anything but the network, an interruption or the
    /// journal (those leave the upload on the server for the next run).
    static func failsForGood(_ failed: ItemFailed) -> Bool {
        !failed.failures.contains {
            [.network, .dns, .tls, .timeout, .interrupted, .cancelled, .journal, .changed].contains($0.rule)
        }
    }
}
