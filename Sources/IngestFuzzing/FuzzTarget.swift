import Foundation
import IngestConfig
import IngestCore
import IngestMedia
import IngestNetwork
import IngestTemplates

/// The parsers `make fuzz` drives with libFuzzer, one entry each. An entry takes any bytes and must return
/// normally: a parser's error is a fine answer, a trap (or a broken invariant, checked with `precondition`) is a
/// bug. The fuzz executable (Sources/IngestFuzz) and the corpus replay test (FuzzCorpusTests) call the same
/// entries, so every committed input in `Tests/Fuzz/<target>/` is re-run by `make test` without a sanitizer.
package enum FuzzTarget: String, CaseIterable, Sendable {
    /// YAML text → pipeline or `PipelineFileErrors`.
    case loader
    /// Template text (up to the first NUL) parsed and rendered against JSON results (after it).
    case template
    /// `JSONValue.parse`; what parses must serialize to text that parses to the same text.
    case json
    /// The S3 POST policy decoder: the bytes as the policy document and as its base64 in a ticket's fields.
    case policy
    /// The multipart/form-data head and tail of an S3 POST; the body must parse back, the file part last.
    case multipart
    /// `Sniffer.sniff(header:)`.
    case sniffer
    /// `ISO6709.parse`; a point it returns must be on the globe.
    case iso6709
    /// Probing of in-memory media: sniffed, then opened by FFmpeg through a custom AVIOContext.
    case media

    /// Runs one input through the target.
    package func run(_ bytes: [UInt8]) {
        switch self {
        case .loader: FuzzEntries.loader(bytes)
        case .template: FuzzEntries.template(bytes)
        case .json: FuzzEntries.json(bytes)
        case .policy: FuzzEntries.policy(bytes)
        case .multipart: FuzzEntries.multipart(bytes)
        case .sniffer: FuzzEntries.sniffer(bytes)
        case .iso6709: FuzzEntries.iso6709(bytes)
        case .media: FuzzEntries.media(bytes)
        }
    }
}

enum FuzzEntries {
    static let environment = ["BACKEND_URL": "http://127.0.0.1:9", "TOKEN": "t", "BUCKET": "b", "HOME": "/nonexistent"]

    static func loader(_ bytes: [UInt8]) {
        let yaml = String(decoding: bytes, as: UTF8.self)
        _ = try? Pipeline.parse(yaml: yaml, source: "fuzz.yml", environment: environment, offline: false)
        _ = try? Pipeline.parse(yaml: yaml, source: "fuzz.yml", environment: [:], offline: true)
    }

    static func template(_ bytes: [UInt8]) {
        let split = bytes.split(separator: 0, maxSplits: 1, omittingEmptySubsequences: false)
        guard let template = try? Template(String(decoding: split[0], as: UTF8.self)) else { return }
        let item = Item(path: "/nonexistent/fuzz/clip.mov", relativePath: "fuzz/clip.mov", size: 1234)
        item.templateValues["date"] = .double(1_700_000_000)
        let results = split.count > 1 ? (try? JSONValue.parse(Array(split[1]))) : nil
        item.facts["r"] = results ?? ["a": ["b": 1, "c": "x"], "list": ["p", "q"]]
        let scope = TemplateScope(item: item, context: StageContext(settings: RunSettings()), stage: "fuzz")
        _ = try? template.render(scope)
        _ = try? template.renderValue(scope)
    }

    static func json(_ bytes: [UInt8]) {
        guard let value = try? JSONValue.parse(bytes) else { return }
        let text = value.serialized()
        guard let again = try? JSONValue.parse(text) else {
            preconditionFailure("serialized JSON does not parse: \(text)")
        }
        precondition(again.serialized() == text, "JSON changed on a round trip: \(text) vs \(again.serialized())")
    }

    static func policy(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        var decoded: [S3PostPolicy] = []
        if let policy = try? S3PostPolicy(json: Data(bytes)) { decoded.append(policy) }
        let fields = ["Policy": Data(bytes).base64EncodedString(), "key": "a/b.jpg", "Content-Type": "image/jpeg"]
        if let policy = try? S3PostPolicy(decodingFields: fields) { decoded.append(policy) }
        if let policy = try? S3PostPolicy(decodingFields: ["policy": text]) { decoded.append(policy) }
        for policy in decoded {
            _ = policy.check(fileSize: Int64(bytes.count), now: Date(timeIntervalSince1970: 1_700_000_000))
            _ = policy.check(fileSize: Int64.max, key: text, contentType: text, now: .distantFuture)
            _ = policy.successActionStatus
            _ = policy.contentLengthRange
            guard let again = try? S3PostPolicy(json: Data(policy.json.utf8)) else {
                preconditionFailure("the policy's own JSON does not decode: \(policy.json)")
            }
            precondition(again.conditions.count == policy.conditions.count, "conditions lost: \(policy.json)")
        }
    }

    static func sniffer(_ bytes: [UInt8]) {
        _ = Sniffer.sniff(header: bytes)
        _ = Sniffer.sniff(header: Array(bytes.prefix(64)))
        let ext = String(decoding: bytes.prefix(8), as: UTF8.self)
        _ = ContentKind.accepted(forExtension: ext)
    }

    static func iso6709(_ bytes: [UInt8]) {
        guard let point = ISO6709.parse(String(decoding: bytes, as: UTF8.self)) else { return }
        precondition(abs(point.latitude) <= 90 && abs(point.longitude) <= 180, "off the globe: \(point)")
        precondition(point.altitude?.isFinite ?? true, "altitude not finite: \(point)")
    }
}
