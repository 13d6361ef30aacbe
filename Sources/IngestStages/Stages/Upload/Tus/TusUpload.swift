import Foundation
import IngestCore
import IngestFiles
import IngestJournal
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
/// The client is `TusSession` (IngestNetwork/Tus/).
struct TusUpload: UploadMethod {
    static let name = "tus"
    static let summary = "a resumable tus 1.0 upload created at `url`; see docs/large-files.md"

    struct Options: StageOptions, Sendable {
        var url: Template?
        var headers = HeaderTemplates()
        var contentType: Template?
        var metadata = HeaderTemplates()
        /// Bytes per PATCH; nil sends the rest of the file in one PATCH.
        var chunkSize: ByteSize?
        var network = NetworkOptions()
        init() {}

        /// 64 KiB … 4 GiB: a smaller piece costs a request per 64 KiB, a larger one is a PATCH no proxy lets through.
        static let chunkRange: ClosedRange<Int64> = (64 << 10)...(4 << 30)

        static var fields: [OptionField<Options>] {
            [
                UploadFields.url(\.url, doc: "The creation endpoint: a `POST` there creates the upload."),
                UploadFields.headers(\.headers),
                UploadFields.contentType(\.contentType),
                OptionField(
                    "metadata", \.metadata, doc: "`Upload-Metadata` entries beside filename and filetype.",
                    default: "{}"),
                OptionField(
                    "chunk_size", \.chunkSize,
                    doc:
                        "Bytes per PATCH (64KiB–4GiB), for servers and proxies that limit a request's body or drop "
                        + "the bytes of a cut one; each piece is acknowledged before the next.",
                    default: "the whole rest of the file in one PATCH"),
            ] + UploadFields.network(\.network)
        }

        func validate(at node: ConfigNode) throws {
            try network.validate(at: node)
            if let chunkSize, !Self.chunkRange.contains(chunkSize.bytes) {
                throw node.error("chunk_size must be between 64KiB and 4GiB, found \(chunkSize)")
            }
        }
    }

    let options: Options
    let limiter: RateLimiter?

    init(options: Options, stage: UploadStage.Options) {
        self.options = options
        limiter = options.network.rate.map(RateLimiter.init(rate:))
    }

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
            stage: UploadStage.name, network: options.network, chunkSize: options.chunkSize?.bytes, limiter: limiter,
            context: context, item: item, endpoint: endpoint, file: whole,
            journalPath: JournalRecord.canonicalRoot(whole.path),
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
            ("filetype", try UploadStage.contentType(options.contentType, of: item, scope: scope)),
        ]
        for entry in options.metadata.entries {
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
