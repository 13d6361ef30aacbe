import Foundation

/// `dedupe: {key: "{{sha256}}"}` — a template rendered per file before any stage runs; a file whose key another
/// journaled file already holds is skipped, naming that file. `{{sha256}}` skips the same content under another
/// name; `"{{dir.name}}-{{date.yyyyMMdd}}"` is HelpPet's "one recording per pet per day", enforced before a
/// request could be refused with 409.
public struct DedupeKey: OptionValue, Sendable, Equatable, CustomStringConvertible {
    enum Part: Sendable, Equatable {
        case text(String)
        case variable(String)
    }

    public let source: String
    let parts: [Part]

    /// The variables a key may use. They are rendered by `JournalTemplate`, the one place to switch to the shared
    /// template renderer.
    static let variables = JournalTemplate.variables

    public init(_ source: String) throws(JournalTemplate.SyntaxError) {
        self.source = source
        var parts: [Part] = []
        var rest = source[...]
        while let open = rest.range(of: "{{") {
            if open.lowerBound > rest.startIndex { parts.append(.text(String(rest[..<open.lowerBound]))) }
            guard let close = rest[open.upperBound...].range(of: "}}") else {
                throw JournalTemplate.SyntaxError(message: "'{{' without a closing '}}' in '\(source)'")
            }
            let name = rest[open.upperBound..<close.lowerBound].trimmingCharacters(in: .whitespaces)
            guard DedupeKey.variables.contains(name) else {
                throw JournalTemplate.SyntaxError(
                    message: "'{{\(name)}}' cannot be used in a dedupe key; use "
                        + DedupeKey.variables.map { "{{\($0)}}" }.joined(separator: ", "))
            }
            parts.append(.variable(name))
            rest = rest[close.upperBound...]
        }
        if !rest.isEmpty { parts.append(.text(String(rest))) }
        guard parts.contains(where: { if case .variable = $0 { true } else { false } }) else {
            throw JournalTemplate.SyntaxError(
                message: "a dedupe key without a {{variable}} would make every file a duplicate of the first")
        }
        self.parts = parts
    }

    public init(from node: ConfigNode) throws {
        let text = try String(from: node)
        do {
            try self.init(text)
        } catch {
            throw node.error(error.message)
        }
    }

    public static var jsonSchema: JSONValue { ["type": "string"] }
    public var description: String { source }

    /// The key for one file. Throws `ItemFailed` (stage `dedupe`) when a value cannot be had (an unreadable file).
    public func render(for item: Item) throws -> String {
        var out = ""
        for part in parts {
            switch part {
            case .text(let text): out += text
            case .variable(let name): out += try JournalTemplate.value(name, item: item, stage: "dedupe")
            }
        }
        return out
    }
}

/// `dedupe:` in the pipeline file.
struct DedupeOptions: StageOptions, Sendable {
    var key: DedupeKey?

    init() {}

    static var fields: [OptionField<DedupeOptions>] {
        [
            OptionField(
                "key", \.key,
                doc:
                    "Template naming what must be unique (`{{sha256}}`: the same content; "
                    + "`{{dir.name}}-{{date.yyyyMMdd}}`: one file per folder per day). Uses "
                    + DedupeKey.variables.map { "`{{\($0)}}`" }.joined(separator: ", ") + ".",
                required: true)
        ]
    }
}

/// The built-in template values the journal needs before any stage runs, kept in one place so they can move to
/// the shared `{{ }}` renderer without changing meaning: the same `uuid` and `date` the upload templates use
/// (`item.templateValues`), and the input file's cached SHA-256.
public enum JournalTemplate {
    public struct SyntaxError: Error, Sendable {
        public var message: String
    }

    static let variables = [
        "sha256", "file.name", "file.stem", "file.ext", "file.path", "dir.name", "date.yyyy", "date.MM", "date.dd",
        "date.yyyyMMdd", "uuid",
    ]

    /// `value(name)` for one of `variables`.
    static func value(_ name: String, item: Item, stage: String) throws -> String {
        switch name {
        case "sha256": return try item.sha256(stage: stage)
        case "file.name": return item.fileName
        case "file.stem": return (item.fileName as NSString).deletingPathExtension
        case "file.ext": return (item.fileName as NSString).pathExtension
        case "file.path": return item.relativePath
        case "dir.name": return ((item.path as NSString).deletingLastPathComponent as NSString).lastPathComponent
        case "uuid": return uuid(of: item)
        default:
            let format = String(name.dropFirst("date.".count))
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "UTC")
            formatter.dateFormat = format
            return formatter.string(from: date(of: item))
        }
    }

    /// The file's `uuid`, made once and kept in `templateValues` (the journal saves it before any upload).
    static func uuid(of item: Item) -> String {
        if case .string(let made)? = item.templateValues["uuid"] { return made }
        let made = UUID().uuidString.lowercased()
        item.templateValues["uuid"] = .string(made)
        return made
    }

    /// The file's `date`: when it was first worked on, kept like `uuid` so a re-run names the same day.
    static func date(of item: Item) -> Date {
        switch item.templateValues["date"] {
        case .double(let seconds)?: return Date(timeIntervalSince1970: seconds)
        case .int(let seconds)?: return Date(timeIntervalSince1970: Double(seconds))
        default:
            let now = Date()
            item.templateValues["date"] = .double(now.timeIntervalSince1970)
            return now
        }
    }
}
