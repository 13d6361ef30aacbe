import Foundation
import IngestCore
import IngestNetwork
import IngestTemplates
import NativeCurl
import NativeSystem

/// `save`: keeps what came back as files a user can open — texts downloaded from (signed) URLs, such as seed 000's
/// `result_urls.coach_summary_url`, and earlier answers as JSON sidecars (seed 001's analysis, seed 002's
/// `primary_subject`). Files go beside the recording, or into `to:`. Every file is downloaded (size-capped) before
/// any is written, and each is written to a temp file renamed into place, so a file is whole or absent. Signed URLs
/// are never printed, and a sidecar is redacted as reports are. In `--dry-run` and `ingest test` nothing is written.
package struct SaveStage: Stage {
    /// One file to write: downloaded from `url`, or `json` (a template value) written as JSON.
    package struct Source: StageOptions, Sendable, Equatable {
        package var url: Template?
        package var json: TemplateValue?
        package init() {}

        package static var fields: [OptionField<Source>] {
            [
                OptionField(
                    "url", \.url, doc: "Download this URL (`{{analysis.fields.result_urls.coach_summary_url}}`)."),
                OptionField("json", \.json, doc: "Write this value as JSON (`\"{{analysis}}\"`), redacted."),
            ]
        }

        package func validate(at node: ConfigNode) throws {
            if (url == nil) == (json == nil) { throw node.error("each file needs one of url or json") }
        }
    }

    /// `files:` — file-name templates and where each file's content comes from, in order.
    package struct Files: OptionValue, Sendable, Equatable {
        package struct Entry: Sendable, Equatable {
            package var name: Template
            package var source: Source
        }
        package var entries: [Entry] = []
        package init() {}

        package init(from node: ConfigNode) throws {
            let pairs = try node.mappingPairs(of: "file names to { url: … } or { json: … }", nonEmpty: true)
            entries = try pairs.map { Entry(name: try Template(from: $0.key), source: try Source(from: $0.value)) }
        }

        package static var jsonSchema: JSONValue {
            ["type": "object", "minProperties": 1, "additionalProperties": Source.jsonSchema]
        }
    }

    package struct Options: StageOptions, Sendable {
        package var to = Template.empty
        package var files = Files()
        package var maxBytes = ByteSize(bytes: 1 << 20)
        package var network = NetworkOptions()
        package init() {}

        package static var fields: [OptionField<Options>] {
            [
                OptionField(
                    "to", \.to,
                    doc: "Folder the files go into (a template; made if missing).", default: "beside the recording"),
                OptionField(
                    "files", \.files,
                    doc: "File names (templates: `\"{{file.stem}}.coach.txt\"`), each with `url:` (downloaded) or "
                        + "`json:` (an earlier answer, written as JSON).",
                    required: true),
                OptionField(
                    "max_bytes", \.maxBytes, range: ByteSize(bytes: 1)...ByteSize(bytes: 256 << 20),
                    doc: "Largest file a download may give; a larger one fails the file and nothing is written.",
                    default: "1MiB"),
            ] + NetworkOptions.fields(\.network)
        }

        package func validate(at node: ConfigNode) throws { try network.validate(at: node) }
    }

    package static let name = "save"
    package static let summary =
        "Writes downloaded texts (signed result URLs) and earlier answers (JSON) as files beside the recording."
    package static let usesNetwork = true

    let options: Options
    let limiter: RateLimiter?

    package init(options: Options) throws {
        self.options = options
        limiter = options.network.rate.map(RateLimiter.init(rate:))
    }

    package func run(_ item: Item, context: StageContext) throws -> StageOutcome {
        let scope = TemplateScope(item: item, context: context, stage: Self.name)
        let folder = try destination(item, scope: scope)
        var contents: [(path: String, bytes: [UInt8])] = []
        var saved = JSONObject()
        for entry in options.files.entries {
            let name = try fileName(entry.name, scope: scope)
            let path = folder + "/" + name
            if let url = entry.source.url {
                contents.append((path, try download(url, to: path, item: item, scope: scope, context: context)))
            } else if let json = entry.source.json {
                contents.append((path, Array((Redaction.json(try json.render(scope)).prettySerialized() + "\n").utf8)))
            }
            saved[name] = .int(Int64(contents.last?.bytes.count ?? 0))
        }
        if context.settings.rehearsal == nil {
            try write(contents)
        }
        item.facts[context.resultName ?? Self.name] = ["folder": .string(folder), "files": .object(saved)]
        return .proceed
    }

    /// The folder the files go into: `to:`, else the recording's own folder.
    private func destination(_ item: Item, scope: TemplateScope) throws -> String {
        guard !options.to.source.isEmpty else { return (item.path as NSString).deletingLastPathComponent }
        let folder = try options.to.render(scope)
        if folder.isEmpty { throw scope.missing("to", because: "it renders empty") }
        return folder.hasSuffix("/") && folder.count > 1 ? String(folder.dropLast()) : folder
    }

    /// A file name as rendered: relative, inside the folder (subfolders allowed, `..` not).
    private func fileName(_ template: Template, scope: TemplateScope) throws -> String {
        let name = try template.render(scope)
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        guard !name.hasPrefix("/"), parts.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." }) else {
            throw ItemFailed(
                stage: Self.name, rule: .option("files"),
                message: "'\(name)' (from \(template.source)) is not a file name inside the folder")
        }
        return name
    }

    /// Downloads one text, capped at `max_bytes`. A signed URL refused as expired (400/403) throws `TicketExpired`:
    /// the run renews the answer it came from (a `poll`, a `request`) and runs the stage again, once.
    private func download(
        _ url: Template, to path: String, item: Item, scope: TemplateScope, context: StageContext
    ) throws -> [UInt8] {
        var request = HTTPRequest(method: "GET", url: try url.render(scope))
        request.maxResponseBytes = Int(min(options.maxBytes.bytes, Int64(Int.max - 1))) + 1
        request.timeout = 300
        options.network.apply(to: &request)
        let exchange = context.exchange(
            stage: Self.name, network: options.network, limiter: limiter, for: item, success: 200)
        let outcome = try exchange.send(request)
        let response = outcome.response
        let shown = "GET \(Redaction.url(request.url)) (for \(path))"
        if (200...299).contains(response.status) {
            if response.truncated || response.body.count > options.maxBytes.bytes {
                throw ItemFailed(
                    stage: Self.name, rule: .maxBytes,
                    message: "\(shown) gave more than max_bytes \(options.maxBytes); nothing was written",
                    expected: "≤ \(options.maxBytes)", actual: "more")
            }
            return response.body
        }
        let said = ServerMessage.of(response).map { ": \($0)" } ?? ""
        let attempts = outcome.attempts > 1 ? " after \(outcome.attempts) attempts" : ""
        let failure = ItemFailed(
            stage: Self.name, rule: .status,
            message: "\(shown) answered \(ServerMessage.statusLine(response.status))\(attempts)\(said); "
                + "nothing was written",
            expected: "2xx", actual: String(response.status))
        guard [400, 403].contains(response.status), !context.ticketRenewed else { throw failure }
        throw TicketExpired(
            stage: Self.name, results: TicketExpired.resultNames(url.variables), what: "the result URL",
            said: "\(response.status)\(said)",
            note: "\(Self.name): renewed the result URLs after \(response.status)\(said)", failure: failure)
    }

    /// Writes every file, each whole or not at all (temp file, fsync, rename); folders are made as needed.
    private func write(_ contents: [(path: String, bytes: [UInt8])]) throws {
        for (path, bytes) in contents {
            do {
                try FileSystem.makeFolders((path as NSString).deletingLastPathComponent)
                let file = try TemporaryOutputFile(finalPath: path)
                try file.write([bytes])
                try file.commit()
            } catch {
                throw ItemFailed(stage: Self.name, rule: .write, message: "cannot write \(path): \(error)")
            }
        }
    }
}
