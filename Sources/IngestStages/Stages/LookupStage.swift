import Foundation
import IngestCore
import IngestTemplates
import NativeSystem

/// `lookup`: values for a file from a CSV manifest (`path,pet_id`), or — when no manifest is given — from
/// templates (`pet_id: "{{dir.name}}"`), saved under `as:` for later templates (`{{pet.pet_id}}`). Each value can be
/// checked against a pattern (`uuid`), so a recording filed under the wrong folder fails before anything is sent.
/// The manifest is read and checked once, when the pipeline loads: a malformed one stops the run (exit 2) naming
/// its file and line.
package struct LookupStage: Stage {
    package struct Options: StageOptions, Sendable {
        package var csv = OptionalText()
        package var key = Template.empty
        package var keyColumn: String?
        package var fallback = TemplateMap()
        package var patterns = PatternMap()
        package init() {}

        package static var fields: [OptionField<Options>] {
            [
                OptionField(
                    "csv", \.csv,
                    doc:
                        "CSV file with a header row (`path,pet_id`); empty means no manifest, so `${MANIFEST:-}` makes "
                        + "it optional. Read when the pipeline loads.",
                    default: "\"\" (use fallback)"),
                OptionField(
                    "key", \.key,
                    doc:
                        "Template matched against the key column. A row also matches when its key, taken as a path "
                        + "relative to the CSV's folder, is the file itself.",
                    default: "{{file.path}}"),
                OptionField("key_column", \.keyColumn, doc: "Column holding the keys.", default: "the first column"),
                OptionField(
                    "fallback", \.fallback,
                    doc: "Values (templates) used when there is no manifest (`pet_id: \"{{dir.name}}\"`).",
                    default: "{}"),
                OptionField(
                    "patterns", \.patterns,
                    doc:
                        "Checks on the values: `uuid` or a regular expression that must match the whole value "
                        + "(`pet_id: uuid`).",
                    default: "{}"),
            ]
        }

        package func validate(at node: ConfigNode) throws {
            if csv.text.isEmpty && fallback.entries.isEmpty {
                throw node.error("lookup needs 'csv' (a manifest) or 'fallback' (values when there is none)")
            }
            let fallbackNames = Set(fallback.entries.map(\.name))
            if csv.text.isEmpty, let name = patterns.entries.map(\.name).first(where: { !fallbackNames.contains($0) }) {
                throw node.error("patterns names '\(name)', which fallback does not give (and there is no csv)")
            }
        }
    }

    package static let name = "lookup"
    package static let templateOffer: TemplateOffer? = TemplateOffer(name: name, fields: nil)
    package static let summary =
        "Looks values up for the file in a CSV manifest (or fills them from templates) and checks them; saved under `as:`."

    let options: Options
    let manifest: CSVManifest?

    package init(options: Options) throws {
        self.options = options
        manifest =
            options.csv.text.isEmpty ? nil : try CSVManifest(path: options.csv.text, keyColumn: options.keyColumn)
        if let manifest {
            let columns = Set(manifest.columns)
            for name in options.patterns.entries.map(\.name) where !columns.contains(name) {
                throw CSVManifest.Failure(
                    message: "\(options.csv.text) has no column '\(name)' (patterns names it); its columns: "
                        + manifest.columns.joined(separator: ", "))
            }
        }
    }

    package func run(_ item: Item, context: StageContext) throws -> StageOutcome {
        let scope = TemplateScope(item: item, context: context, stage: Self.name)
        var values = JSONObject()
        let origin: String
        if let manifest {
            let key = try (options.key.source.isEmpty ? Template("{{file.path}}") : options.key).render(scope)
            guard let row = manifest.row(key: key, path: item.path) else {
                throw ItemFailed(
                    stage: Self.name, rule: .csv,
                    message: "the file is not in \(manifest.path) (no row with \(manifest.keyColumn) '\(key)')",
                    expected: "a row for the file", actual: "none")
            }
            for (column, value) in zip(manifest.columns, row.values) {
                values[column] = .string(value.trimmingCharacters(in: .whitespaces))
            }
            origin = "from \(manifest.path) line \(row.line)"
        } else {
            for entry in options.fallback.entries { values[entry.name] = .string(try entry.value.render(scope)) }
            origin = "from fallback"
        }
        var failures: [RuleFailure] = []
        for check in options.patterns.entries {
            let value = values[check.name]?.stringValue ?? ""
            if !check.pattern.matches(value) {
                let template = manifest == nil ? options.fallback.entries.first { $0.name == check.name }?.value : nil
                failures.append(
                    RuleFailure(
                        stage: Self.name, rule: .pattern(check.name),
                        message: "\(check.name) '\(value)' (\(template.map { "\($0.source), " } ?? "")\(origin)) is "
                            + "not \(check.pattern.description)",
                        expected: check.pattern.description, actual: value))
            }
        }
        if !failures.isEmpty { throw ItemFailed(failures) }
        item.facts[context.resultName ?? Self.name] = .object(values)
        return .proceed
    }
}

/// Text where null and nothing mean the same: `csv: ${MANIFEST:-}` with the variable unset reads as "no manifest".
package struct OptionalText: OptionValue, Sendable, Equatable {
    package var text = ""
    package init() {}
    package init(from node: ConfigNode) throws {
        if node.isNull { return }
        text = try String(from: node).trimmingCharacters(in: .whitespaces)
    }
    package static var jsonSchema: JSONValue { ["type": "string"] }
}

/// A mapping of names to templates, order kept (`fallback:`).
package struct TemplateMap: OptionValue, Sendable, Equatable {
    package struct Entry: Sendable, Equatable {
        package var name: String
        package var value: Template
    }
    package var entries: [Entry] = []
    package init() {}

    package init(from node: ConfigNode) throws {
        entries = try node.mappingPairs(of: "names to templates").map {
            Entry(name: try String(from: $0.key), value: try Template(from: $0.value))
        }
    }

    package static var jsonSchema: JSONValue {
        ["type": "object", "additionalProperties": ["type": ["string", "number", "boolean"]]]
    }
}

/// What a value must look like: `uuid` (RFC 4122 text, any case) or a regular expression matched against the
/// whole value.
package struct ValuePattern: Sendable, Equatable, CustomStringConvertible {
    package let source: String
    private let expression: String

    package init(_ source: String) throws {
        self.source = source
        expression =
            source == "uuid" ? "[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}" : source
        do {
            _ = try NSRegularExpression(pattern: expression)
        } catch {
            throw TemplateSyntaxError(message: "'\(source)' is not a regular expression (or uuid)")
        }
    }

    package func matches(_ value: String) -> Bool {
        guard let regex = try? NSRegularExpression(pattern: "\\A(?:\(expression))\\z") else { return false }
        return regex.firstMatch(in: value, range: NSRange(value.startIndex..., in: value)) != nil
    }

    package var description: String { source == "uuid" ? "a UUID" : "matched by /\(source)/" }
}

/// `patterns:` — a mapping of value names to `ValuePattern`s.
package struct PatternMap: OptionValue, Sendable, Equatable {
    package struct Entry: Sendable, Equatable {
        package var name: String
        package var pattern: ValuePattern
    }
    package var entries: [Entry] = []
    package init() {}

    package init(from node: ConfigNode) throws {
        entries = try node.mappingPairs(of: "names to `uuid` or a regular expression").map { pair in
            let text = try String(from: pair.value)
            do {
                return Entry(name: try String(from: pair.key), pattern: try ValuePattern(text))
            } catch let error as TemplateSyntaxError {
                throw pair.value.error(error.message)
            }
        }
    }

    package static var jsonSchema: JSONValue { ["type": "object", "additionalProperties": ["type": "string"]] }
}

/// A CSV manifest (RFC 4180: comma-separated, `"` quotes with `""` inside, CRLF or LF, a header row), indexed by one
/// column. Read whole when the pipeline loads — it is a list of names, not media — and refused past 64 MiB.
struct CSVManifest: Sendable {
    struct Failure: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    struct Row: Sendable {
        var values: [String]
        var line: Int
    }

    static let maximumBytes = 64 << 20

    let path: String
    let columns: [String]
    let keyColumn: String
    private let byKey: [String: Row]
    private let byPath: [String: Row]

    init(path: String, keyColumn: String?) throws {
        self.path = path
        let bytes: [UInt8]
        do {
            let size = try FileStatus(path: path, followLinks: true).size
            if size > Self.maximumBytes { throw Failure(message: "the manifest \(path) is larger than 64 MiB") }
            bytes = try ReadOnlyFile(path: path).read(at: 0, count: Int(size))
        } catch let error as SystemError {
            throw Failure(message: "cannot read the manifest \(path): \(error.reason)")
        }
        guard var text = String(validating: bytes, as: UTF8.self) else {
            throw Failure(message: "the manifest \(path) is not UTF-8 text")
        }
        if text.hasPrefix("\u{FEFF}") { text.removeFirst() }
        let records = try Self.parse(text, path: path)
        guard let header = records.first else { throw Failure(message: "the manifest \(path) is empty") }
        let names = header.values.map { $0.trimmingCharacters(in: .whitespaces) }
        columns = names
        if let duplicate = names.first(where: { name in names.filter { $0 == name }.count > 1 }) {
            throw Failure(message: "\(path) line 1: column '\(duplicate)' appears twice")
        }
        let keyName = keyColumn ?? names[0]
        self.keyColumn = keyName
        guard let keyIndex = names.firstIndex(of: keyName) else {
            throw Failure(
                message: "\(path) has no column '\(keyName)' (key_column); its columns: "
                    + names.joined(separator: ", "))
        }
        let folder = (path as NSString).deletingLastPathComponent
        var byKey: [String: Row] = [:]
        var byPath: [String: Row] = [:]
        for row in records.dropFirst() {
            guard row.values.count == names.count else {
                throw Failure(
                    message: "\(path) line \(row.line): \(row.values.count) fields, but the header has \(names.count)")
            }
            let key = Self.normalized(row.values[keyIndex])
            if key.isEmpty { throw Failure(message: "\(path) line \(row.line): the \(keyName) is empty") }
            if let earlier = byKey[key] {
                throw Failure(message: "\(path) line \(row.line): '\(key)' is already on line \(earlier.line)")
            }
            byKey[key] = row
            let absolute = key.hasPrefix("/") ? key : (folder.isEmpty ? key : folder + "/" + key)
            byPath[Self.absolute(absolute)] = row
        }
        self.byKey = byKey
        self.byPath = byPath
    }

    /// The row whose key is `key`, else the one whose key names the file at `path`.
    func row(key: String, path: String) -> Row? {
        byKey[Self.normalized(key)] ?? byPath[Self.absolute(path)]
    }

    static func normalized(_ key: String) -> String {
        var key = key.trimmingCharacters(in: .whitespaces)
        while key.hasPrefix("./") { key.removeFirst(2) }
        return key
    }

    /// An absolute, standardized path (`..` and `.` resolved, symlinks not).
    static func absolute(_ path: String) -> String {
        let full = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        return (full as NSString).standardizingPath
    }

    /// Records of RFC 4180 CSV with the line each starts on; blank lines are skipped.
    static func parse(_ text: String, path: String) throws -> [Row] {
        var reader = CSVReader(text)
        while let scalar = reader.next() {
            if reader.quoted {
                reader.readQuoted(scalar)
            } else if !reader.readUnquoted(scalar) {
                throw Failure(message: "\(path) line \(reader.line): a quote inside an unquoted field")
            }
        }
        if reader.quoted { throw Failure(message: "\(path) line \(reader.rowLine): a quoted field is not closed") }
        if !reader.field.isEmpty || !reader.values.isEmpty { reader.endRow() }
        return reader.rows
    }
}

/// Where `CSVManifest.parse` stands: the records so far, the record and field being read, and the line.
private struct CSVReader {
    var rows: [CSVManifest.Row] = []
    var field = ""
    var values: [String] = []
    var quoted = false
    var wasQuoted = false
    var line = 1
    var rowLine = 1
    var scalars: String.UnicodeScalarView.Iterator
    /// A character read ahead (after a closing quote or a CR) and not yet taken.
    var pending: Unicode.Scalar? = nil

    init(_ text: String) { scalars = text.unicodeScalars.makeIterator() }

    mutating func next() -> Unicode.Scalar? {
        if let scalar = pending {
            pending = nil
            return scalar
        }
        return scalars.next()
    }

    /// Inside quotes: `""` is a quote, a lone `"` closes the field, anything else (line breaks too) is text.
    mutating func readQuoted(_ scalar: Unicode.Scalar) {
        if scalar == "\"" {
            let next = scalars.next()
            if next == "\"" {
                field.unicodeScalars.append("\"")
            } else {
                quoted = false
                pending = next
            }
        } else {
            if scalar == "\n" { line += 1 }
            field.unicodeScalars.append(scalar)
        }
    }

    /// Outside quotes; false for a quote inside an unquoted field.
    mutating func readUnquoted(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "\"":
            guard field.isEmpty else { return false }
            quoted = true
            wasQuoted = true
        case ",":
            values.append(field)
            field = ""
        case "\r":
            let next = scalars.next()
            if next != "\n" { pending = next }
            endLine()
        case "\n":
            endLine()
        default:
            field.unicodeScalars.append(scalar)
        }
        return true
    }

    mutating func endLine() {
        endRow()
        line += 1
        rowLine = line
    }

    /// Ends the record; a blank line (one empty unquoted field) is no record.
    mutating func endRow() {
        values.append(field)
        if !(values.count == 1 && values[0].isEmpty && !wasQuoted) {
            rows.append(CSVManifest.Row(values: values, line: rowLine))
        }
        values = []
        field = ""
        wasQuoted = false
    }
}
