import Crypto
import Foundation
import IngestNative

/// Text with `{{ name.path }}` placeholders (Mustache's delimiters, without sections or escaping: values go
/// into URLs, headers, keys and JSON, never HTML). Parsed when the pipeline loads, so a malformed template is a
/// pipeline-file error with a line number rather than a per-file surprise. A variable may end in filters, as in
/// Liquid: `{{geohash | first:5}}` (seed 004 groups objects by a 5-character cell of a 6-character geohash).
public struct Template: OptionValue, Sendable, Equatable, CustomStringConvertible {
    enum Part: Sendable, Equatable {
        case text(String)
        case variable(String)
        /// A variable whose text goes through filters, left to right; the result is always a string.
        case filtered(String, [TemplateFilter])
    }

    public let source: String
    let parts: [Part]

    /// The empty template: a placeholder default for options that are required (it never reaches a request).
    public static let empty = Template(source: "", parts: [])

    private init(source: String, parts: [Part]) {
        self.source = source
        self.parts = parts
    }

    public init(_ source: String) throws {
        self.source = source
        var parts: [Part] = []
        var rest = source[...]
        while let open = rest.range(of: "{{") {
            if open.lowerBound > rest.startIndex { parts.append(.text(String(rest[..<open.lowerBound]))) }
            guard let close = rest[open.upperBound...].range(of: "}}") else {
                throw TemplateSyntaxError(message: "'{{' without a closing '}}' in '\(source)'")
            }
            let inside = rest[open.upperBound..<close.lowerBound].split(
                separator: "|", omittingEmptySubsequences: false)
            let name = inside[0].trimmingCharacters(in: .whitespaces)
            let filters = try inside.dropFirst().map { try TemplateFilter(parsing: String($0), in: source) }
            let valid =
                !name.isEmpty
                && name.split(separator: ".", omittingEmptySubsequences: false).allSatisfy {
                    !$0.isEmpty && $0.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" }
                }
            guard valid else {
                throw TemplateSyntaxError(message: "'{{\(name)}}' is not a variable name like file.name")
            }
            parts.append(filters.isEmpty ? .variable(name) : .filtered(name, filters))
            rest = rest[close.upperBound...]
        }
        if !rest.isEmpty { parts.append(.text(String(rest))) }
        self.parts = parts
    }

    public init(from node: ConfigNode) throws {
        let text = try String(from: node)
        do {
            try self.init(text)
        } catch let error as TemplateSyntaxError {
            throw node.error(error.message)
        }
    }

    public static var jsonSchema: JSONValue { ["type": "string"] }
    public var description: String { source }

    /// Every variable named, in order.
    public var variables: [String] {
        parts.compactMap {
            switch $0 {
            case .variable(let name), .filtered(let name, _): return name
            case .text: return nil
            }
        }
    }

    /// The variable when the template is exactly one `{{x}}` and nothing else: such a value keeps x's JSON type.
    var soleVariable: String? {
        if parts.count == 1, case .variable(let name) = parts[0] { return name }
        return nil
    }

    /// The text with every variable filled in; objects and arrays are written as compact JSON.
    func render(_ scope: TemplateScope) throws -> String {
        var out = ""
        for part in parts {
            switch part {
            case .text(let text): out += text
            case .variable(let name):
                let value = try scope.value(name)
                switch value {
                case .null: throw scope.missing(name, because: "it is null")
                case .object, .array: out += value.serialized()
                default: out += value.stringValue ?? ""
                }
            case .filtered(let name, let filters):
                let value = try scope.value(name)
                if case .null = value { throw scope.missing(name, because: "it is null") }
                var text: String
                switch value {
                case .object, .array: text = value.serialized()
                default: text = value.stringValue ?? ""
                }
                for filter in filters { text = filter.apply(text) }
                out += text
            }
        }
        return out
    }

    /// As `render`, but a template that is exactly one variable yields that variable's value with its type.
    func renderValue(_ scope: TemplateScope) throws -> JSONValue {
        if let name = soleVariable { return try scope.value(name) }
        return .string(try render(scope))
    }
}

/// A filter after a template variable: `first:N` and `last:N` keep that many characters, `lower` and `upper` change
/// case (`{{file.ext | lower}}` keys `IMG_1.JPG` as `.jpg`).
enum TemplateFilter: Sendable, Equatable {
    case first(Int)
    case last(Int)
    case lower
    case upper

    static let names = "first:N, last:N, lower, upper"

    init(parsing text: String, in source: String) throws {
        let parts = text.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
        let count = parts.count == 2 ? Int(parts[1]) : nil
        switch (parts.first ?? "", count) {
        case ("first", let count?) where count > 0: self = .first(count)
        case ("last", let count?) where count > 0: self = .last(count)
        case ("lower", nil) where parts.count == 1: self = .lower
        case ("upper", nil) where parts.count == 1: self = .upper
        default:
            throw TemplateSyntaxError(
                message: "'\(text.trimmingCharacters(in: .whitespaces))' in '\(source)' is not a filter; "
                    + "filters: \(Self.names) (N a positive whole number)")
        }
    }

    func apply(_ text: String) -> String {
        switch self {
        case .first(let count): return String(text.prefix(count))
        case .last(let count): return String(text.suffix(count))
        case .lower: return text.lowercased()
        case .upper: return text.uppercased()
        }
    }
}

public struct TemplateSyntaxError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// A JSON value written in YAML whose strings are templates: `json:` bodies and s3-post `fields:`. Plain YAML
/// numbers, booleans and null keep their type; a quoted or plain string is a template, and one that is exactly
/// `{{x}}` takes x's type (so `"{{probe.duration}}"` sends a number and `"{{ticket.upload_fields}}"` an object).
public indirect enum TemplateValue: OptionValue, Sendable, Equatable {
    case literal(JSONValue)
    case text(Template)
    case array([TemplateValue])
    case object([TemplatePair])

    public struct TemplatePair: Sendable, Equatable {
        public var key: String
        public var value: TemplateValue
    }

    public init(from node: ConfigNode) throws {
        switch node.kind {
        case .scalar(let text, let plain):
            if node.isNull {
                self = .literal(.null)
            } else if plain, text == "true" || text == "false" {
                self = .literal(.bool(text == "true"))
            } else if plain, let int = Int64(text) {
                self = .literal(.int(int))
            } else if plain, let double = Double(text), double.isFinite, text.contains(where: { $0.isNumber }) {
                self = .literal(.double(double))
            } else {
                self = .text(try Template(from: node))
            }
        case .sequence(let items): self = .array(try items.map(TemplateValue.init(from:)))
        case .mapping(let pairs):
            self = .object(
                try pairs.map { pair in
                    TemplatePair(key: try String(from: pair.key), value: try TemplateValue(from: pair.value))
                })
        }
    }

    public static var jsonSchema: JSONValue { [:] }

    func render(_ scope: TemplateScope) throws -> JSONValue {
        switch self {
        case .literal(let value): return value
        case .text(let template): return try template.renderValue(scope)
        case .array(let items): return .array(try items.map { try $0.render(scope) })
        case .object(let pairs):
            var object = JSONObject()
            for pair in pairs { object[pair.key] = try pair.value.render(scope) }
            return .object(object)
        }
    }

    /// Every variable named anywhere inside.
    var variables: [String] {
        switch self {
        case .literal: return []
        case .text(let template): return template.variables
        case .array(let items): return items.flatMap(\.variables)
        case .object(let pairs): return pairs.flatMap(\.value.variables)
        }
    }
}

/// Where template variables come from for one file: the built-ins (`file.*`, `artifact.*`, `dir.name`, `sha256`,
/// `md5`, `uuid`, `date.*`, `probe.*`, `geohash`, `env.*`) and each earlier stage's results under its `as:` name.
/// A variable without a value fails the file, naming the variable.
struct TemplateScope {
    let item: Item
    let context: StageContext
    let stage: String

    func missing(_ name: String, because reason: String) -> ItemFailed {
        ItemFailed(stage: stage, rule: "template", message: "{{\(name)}} has no value: \(reason)")
    }

    func value(_ name: String) throws -> JSONValue {
        let path = name.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let root = path[0]
        let rest = path.dropFirst().joined(separator: ".")
        switch name {
        case "file.name": return .string(item.fileName)
        case "file.stem": return .string((item.fileName as NSString).deletingPathExtension)
        case "file.ext": return .string((item.fileName as NSString).pathExtension)
        case "file.size":
            return .int(
                (try? FileManager.default.attributesOfItem(atPath: item.artifact)[.size] as? Int64) ?? item.size)
        case "file.path": return .string(item.relativePath)
        case _ where root == "artifact" && item.facts[root] == nil:
            guard let value = item.artifactValue(rest) else { throw missing(name, because: Item.artifactOffers) }
            return value
        case "dir.name":
            let parent = (item.path as NSString).deletingLastPathComponent
            return .string((parent as NSString).lastPathComponent)
        case "sha256", "md5": return .string(try FileDigests.digest(name, of: item, stage: stage))
        case "uuid":
            if let cached = item.templateValues["uuid"] { return cached }
            let made = JSONValue.string(UUID().uuidString.lowercased())
            item.templateValues["uuid"] = made
            return made
        default: break
        }
        switch root {
        case "date":
            let date: Date
            if case .double(let seconds) = item.templateValues["date"] {
                date = Date(timeIntervalSince1970: seconds)
            } else {
                date = Date()
                item.templateValues["date"] = .double(date.timeIntervalSince1970)
            }
            let formats = ["yyyy": "yyyy", "MM": "MM", "dd": "dd", "yyyyMMdd": "yyyyMMdd", "HH": "HH", "mm": "mm"]
            guard let format = formats[rest] else {
                throw missing(name, because: "date offers yyyy, MM, dd, yyyyMMdd, HH, mm")
            }
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "UTC")
            formatter.dateFormat = format
            return .string(formatter.string(from: date))
        case "env":
            guard !rest.isEmpty, let value = context.settings.environment[rest] else {
                throw missing(name, because: "environment variable '\(rest)' is not set")
            }
            return .string(value)
        case "probe" where item.facts[root] == nil:
            let probe = try context.probe(item, stage: stage)
            return try lookup(.object(Self.probeShortcuts(probe.json, probe)), rest, name: name, root: root)
        case "file", "dir":
            throw missing(name, because: "file offers name, stem, ext, size, path; dir offers name")
        default: break
        }
        // A dry run's answers have no fields: what only a server could say shows as `<ticket.upload_url>`.
        if item.templateValues["placeholder:" + root] != nil, !rest.isEmpty,
            (try? lookup(item.facts[root] ?? .null, rest, name: name, root: root)) == nil
        {
            return .string("<\(name)>")
        }
        guard var fact = item.templateValues["result:" + root] ?? item.facts[root] else {
            throw missing(
                name,
                because: "no earlier stage saved results as '\(root)' (built-ins: file.*, artifact.*, dir.name, "
                    + "sha256, md5, uuid, date.*, probe.*, geohash, env.*)")
        }
        if root == "probe", case .object(let object) = fact, let probe = item.probeResult {
            fact = .object(Self.probeShortcuts(object, probe))
        }
        return try lookup(fact, rest, name: name, root: root)
    }

    private func lookup(_ value: JSONValue, _ rest: String, name: String, root: String) throws -> JSONValue {
        if rest.isEmpty { return value }
        var current = value
        var walked = root
        for part in rest.split(separator: ".", omittingEmptySubsequences: false).map(String.init) {
            guard let next = JSONValue.object(["x": current]).lookup("x.\(part)") else {
                let fields: String
                if case .object(let object) = current {
                    fields =
                        object.keys.isEmpty ? "it is empty" : "it has " + object.keys.prefix(12).joined(separator: ", ")
                } else {
                    fields = "it is not an object"
                }
                throw missing(name, because: "'\(walked)' has no field '\(part)' (\(fields))")
            }
            current = next
            walked += "." + part
        }
        return current
    }

    /// `probe.duration`, `probe.width` … as ffprobe users write them, beside the nested `format` object.
    static func probeShortcuts(_ json: JSONObject, _ probe: ProbeResult) -> JSONObject {
        var object = json
        if object["duration"] == nil, let duration = probe.duration { object["duration"] = .double(duration) }
        if object["size"] == nil { object["size"] = .int(probe.size) }
        if object["format_name"] == nil { object["format_name"] = .string(probe.formatName) }
        if let (width, height) = probe.dimensions {
            if object["width"] == nil { object["width"] = .int(Int64(width)) }
            if object["height"] == nil { object["height"] = .int(Int64(height)) }
        }
        return object
    }

    /// A storage key made safe: control characters become `_`, leading `/`, empty and `.` segments go, and a
    /// `..` segment fails the file (it would point outside the destination).
    func sanitizedKey(_ raw: String, option: String = "key") throws -> String {
        var text = String.UnicodeScalarView()
        for scalar in raw.unicodeScalars {
            text.append(scalar.properties.generalCategory == .control ? "_" : scalar)
        }
        let segments = String(text).split(separator: "/", omittingEmptySubsequences: true).filter { $0 != "." }
        if segments.contains("..") {
            throw ItemFailed(
                stage: stage, rule: option, message: "the \(option) '\(raw)' contains a '..' segment",
                expected: "a relative key inside the destination", actual: raw)
        }
        guard !segments.isEmpty else {
            throw ItemFailed(stage: stage, rule: option, message: "the \(option) is empty after rendering '\(raw)'")
        }
        return segments.joined(separator: "/")
    }
}

/// SHA-256 and MD5 of the file being sent, read once in 256 KiB chunks and cached on the item (an upload that
/// streams the whole file fills the SHA-256 cache too, so a later callback does not read it again). MD5 is only
/// computed when a template asks for `{{md5}}`: it is the slower of the two and would cap upload throughput.
enum FileDigests {
    static func digest(_ name: String, of item: Item, stage: String) throws -> String {
        if case .string(let cached) = item.templateValues[name] { return cached }
        // The original's hash, already read (a dedupe key) or restored from the journal: one value, one read.
        if name == "sha256", item.artifact == item.path, let known = item.knownSHA256 {
            item.templateValues["sha256"] = .string(known)
            return known
        }
        guard let handle = FileHandle(forReadingAtPath: item.artifact) else {
            throw ItemFailed(stage: stage, rule: "unreadable", message: "cannot open \(item.artifact) to hash it")
        }
        defer { try? handle.close() }
        let hasher = DigestObserver(md5: name == "md5")
        do {
            while let chunk = try handle.read(upToCount: 256 * 1024), !chunk.isEmpty {
                chunk.withUnsafeBytes { hasher.consume($0) }
            }
        } catch {
            throw ItemFailed(stage: stage, rule: "unreadable", message: "cannot read \(item.artifact): \(error)")
        }
        hasher.store(on: item)
        return name == "md5" ? hasher.md5Hex ?? "" : hasher.sha256Hex
    }
}

/// Hashes bytes as they stream past (to a server or from disk); restarts when an upload rewinds.
///
/// `.inline` hashes on the thread that hands the bytes over (a local read or copy). `.background` is for uploads:
/// curl's one thread moves every transfer, so hashing there would cap them all; it only copies each chunk into one
/// of `slotCount` reusable buffers and a serial queue per observer hashes them in order. When every buffer is
/// taken the sender waits for one (back-pressure: memory stays at `slotCount` chunks however big the file).
/// `.countOnly` hashes nothing (no journal records the hash and no template reads it during the upload; a later
/// `{{sha256}}` still reads the file on demand).
final class DigestObserver: HTTPBodyObserver, @unchecked Sendable {
    enum Mode: Sendable { case inline, background, countOnly }

    let mode: Mode
    private let includeSHA256: Bool
    private let includeMD5: Bool
    // Hash state: touched only by the sender's thread (`.inline`) or only on `queue` (`.background`).
    private var digest: StreamDigest
    private var finalized: StreamDigest.Result?
    /// Bytes handed over since the last restart, on the sender's thread (what `progress` is told).
    private var sent: Int64 = 0
    /// Told the bytes done so far (the live progress display); called on the thread that reads the file.
    var progress: ((Int64) -> Void)?

    static let slotCount = 4
    private let queue: DispatchQueue?
    private let freeSlots = DispatchSemaphore(value: DigestObserver.slotCount)
    private let slotLock = NSLock()
    /// Buffers not holding a chunk right now (arrays keep their capacity, so they are reused, not reallocated).
    private var idle: [[UInt8]] = []

    /// `sha256: false` is for a single S3 PUT without a journal: only the MD5 its ETag is checked against.
    init(sha256: Bool = true, md5: Bool = false, mode: Mode = .inline) {
        includeSHA256 = sha256
        includeMD5 = md5
        digest = StreamDigest(sha256: sha256, md5: md5)
        self.mode = mode
        queue = mode == .background ? DispatchQueue(label: "ingest-digest") : nil
    }

    func restart() {
        sent = 0
        switch mode {
        case .inline: resetHash()
        case .background: queue!.async { self.resetHash() }
        case .countOnly: break
        }
    }

    func consume(_ bytes: UnsafeRawBufferPointer) {
        switch mode {
        case .inline: hash(bytes)
        case .background: hashInBackground(bytes)
        case .countOnly: break
        }
        sent += Int64(bytes.count)
        progress?(sent)
    }

    private func resetHash() {
        digest = StreamDigest(sha256: includeSHA256, md5: includeMD5)
        finalized = nil
    }

    private func hash(_ bytes: UnsafeRawBufferPointer) { digest.update(bytes) }

    private func hashInBackground(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        freeSlots.wait()
        slotLock.lock()
        var buffer = idle.popLast() ?? []
        slotLock.unlock()
        buffer.removeAll(keepingCapacity: true)
        buffer.append(contentsOf: bytes)
        queue!.async { [buffer] in
            buffer.withUnsafeBytes { self.hash($0) }
            self.slotLock.lock()
            self.idle.append(buffer)
            self.slotLock.unlock()
            self.freeSlots.signal()
        }
    }

    /// Waits for the chunks still queued (background mode) so the hash state is complete.
    private func drain() { queue?.sync {} }

    /// Bytes hashed since the last restart (bytes handed over when hashing nothing).
    var count: Int64 {
        if mode == .countOnly { return sent }
        drain()
        return digest.count
    }

    /// The digests of the bytes since the last restart (background mode: once every queued chunk is hashed).
    func finish() -> StreamDigest.Result {
        drain()
        if let finalized { return finalized }
        let result = digest.finalize()
        finalized = result
        return result
    }

    var sha256Hex: String { finish().sha256Hex }
    var md5Hex: String? { includeMD5 ? finish().md5Hex : nil }

    func store(on item: Item) {
        if mode == .countOnly || !includeSHA256 { return }
        item.templateValues["sha256"] = .string(sha256Hex)
        // Streaming the original file hashed it for the journal too.
        if item.artifact == item.path { item.knownSHA256 = sha256Hex }
        if let md5Hex { item.templateValues["md5"] = .string(md5Hex) }
    }
}
