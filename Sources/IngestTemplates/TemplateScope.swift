import Foundation
import IngestCore
import IngestFiles
import IngestMedia

/// Where template variables come from for one file: the built-ins (`file.*`, `artifact.*`, `dir.name`, `sha256`,
/// `md5`, `uuid`, `date.*`, `probe.*`, `geohash`, `env.*`) and each earlier stage's results under its `as:` name.
/// A variable without a value fails the file, naming the variable.
package struct TemplateScope {
    let item: Item
    let context: StageContext
    let stage: String

    package init(item: Item, context: StageContext, stage: String) {
        self.item = item
        self.context = context
        self.stage = stage
    }

    package func missing(_ name: String, because reason: String) -> ItemFailed {
        ItemFailed(stage: stage, rule: .template, message: "{{\(name)}} has no value: \(reason)")
    }

    /// The value of `{{name}}` for this file: a built-in, else the result an earlier stage saved under `name`'s
    /// first segment.
    func value(_ name: String) throws -> JSONValue {
        let path = name.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let root = path[0]
        let rest = path.dropFirst().joined(separator: ".")
        if let value = try fileValue(name, root: root, rest: rest) ?? builtInValue(name, root: root, rest: rest) {
            return value
        }
        return try stageResult(name, root: root, rest: rest)
    }

    /// `file.*`, `artifact.*`, `dir.name`, `sha256`, `md5` and `uuid`: what the file itself gives.
    private func fileValue(_ name: String, root: String, rest: String) throws -> JSONValue? {
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
        case "uuid": return .string(JournalTemplate.uuid(of: item))
        default: return nil
        }
    }

    /// `date.*`, `env.*` and `probe.*` (when no stage saved results as `probe`); nil for any other root.
    private func builtInValue(_ name: String, root: String, rest: String) throws -> JSONValue? {
        switch root {
        case "date": return .string(try formattedDate(name, format: rest))
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
        default: return nil
        }
    }

    /// The file's fixed `date` (UTC) in one of the offered formats.
    private func formattedDate(_ name: String, format: String) throws -> String {
        let date = JournalTemplate.date(of: item)
        let formats = ["yyyy": "yyyy", "MM": "MM", "dd": "dd", "yyyyMMdd": "yyyyMMdd", "HH": "HH", "mm": "mm"]
        guard let format = formats[format] else {
            throw missing(name, because: "date offers yyyy, MM, dd, yyyyMMdd, HH, mm")
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = format
        return formatter.string(from: date)
    }

    /// A field of what an earlier stage saved under its `as:` name (`ticket.upload_url`).
    private func stageResult(_ name: String, root: String, rest: String) throws -> JSONValue {
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
}
