import Foundation
import IngestCore
import NativeCurl

/// Firestore's REST value format (`{"stringValue": "x"}`, `{"integerValue": "0"}`, `mapValue`, `arrayValue` …),
/// written from and read back into plain JSON, so a pipeline writes `status: queued` and reads
/// `{{job.fields.status}}` instead of spelling out the types.
package enum Firestore {
    /// A plain value in Firestore's typed form: strings, whole numbers (as the decimal text Firestore wants for
    /// int64), doubles, booleans, null, arrays and maps.
    static func typed(_ value: JSONValue) -> JSONValue {
        switch value {
        case .null: return ["nullValue": .null]
        case .bool(let flag): return ["booleanValue": .bool(flag)]
        case .int(let number): return ["integerValue": .string(String(number))]
        case .double(let number): return ["doubleValue": .double(number)]
        case .string(let text): return ["stringValue": .string(text)]
        case .array(let items): return ["arrayValue": ["values": .array(items.map(typed))]]
        case .object(let object): return ["mapValue": ["fields": .object(typedFields(object))]]
        }
    }

    package static func typedFields(_ object: JSONObject) -> JSONObject {
        var fields = JSONObject()
        for (key, value) in object.pairs { fields[key] = typed(value) }
        return fields
    }

    /// A typed value as plain JSON: timestamps, references and bytes as their text, a geo point as
    /// `{latitude, longitude}`; anything unknown is kept as it came.
    static func plain(_ value: JSONValue) -> JSONValue {
        guard case .object(let object) = value, object.pairs.count == 1, let pair = object.pairs.first else {
            return value
        }
        let inner = pair.1
        switch pair.0 {
        case "nullValue": return .null
        case "booleanValue", "doubleValue", "stringValue", "timestampValue", "referenceValue", "bytesValue",
            "geoPointValue":
            return inner
        case "integerValue": return inner.stringValue.flatMap { Int64($0) }.map { JSONValue.int($0) } ?? inner
        case "arrayValue": return .array((inner["values"].flatMap(\.arrayItems) ?? []).map(plain))
        case "mapValue": return .object(plainFields(inner["fields"]))
        default: return value
        }
    }

    static func plainFields(_ fields: JSONValue?) -> JSONObject {
        var out = JSONObject()
        if case .object(let object)? = fields {
            for (key, value) in object.pairs { out[key] = plain(value) }
        }
        return out
    }

    /// A Firestore document (`{name, fields, createTime, updateTime}`) with plain fields and its `id` (the last
    /// segment of its name); nil when `value` is not a document.
    package static func plainDocument(_ value: JSONValue) -> JSONValue? {
        guard case .object(let object) = value, case .string(let name)? = object["name"] else { return nil }
        var document: JSONObject = [
            "name": .string(name), "id": .string(String(name.split(separator: "/").last ?? "")),
            "fields": .object(plainFields(object["fields"])),
        ]
        for key in ["createTime", "updateTime"] { document[key] = object[key] }
        return .object(document)
    }

    /// The database part of a `…/v1/projects/P/databases/D/documents:commit` URL
    /// (`projects/P/databases/D/documents`), which a document's full name starts with; nil for any other URL.
    package static func documentsRoot(ofCommitURL url: String) -> String? {
        let path = url.split(separator: "?", maxSplits: 1).first.map(String.init) ?? url
        guard path.hasSuffix("/documents:commit"), let v1 = path.range(of: "/v1/projects/") else { return nil }
        let root = path[path.index(v1.lowerBound, offsetBy: 4)..<path.index(path.endIndex, offsetBy: -7)]
        return String(root).removingPercentEncoding ?? String(root)
    }

    /// The REST URL that reads the document `name` (`projects/P/databases/D/documents/jobs/ID`), beside the commit
    /// URL it was written through (same host, same query: an API key stays).
    package static func documentURL(commitURL: String, name: String) -> String {
        let parts = commitURL.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let base = String(parts[0].dropLast(":commit".count))
        let relative = name.split(separator: "/").drop { $0 != "documents" }.dropFirst()
        let path = relative.map { $0.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? String($0) }
        return base + "/" + path.joined(separator: "/") + (parts.count > 1 ? "?" + parts[1] : "")
    }

    /// True when a commit's answer is Firestore's "already exists" for the document named `name` (409
    /// `ALREADY_EXISTS`, "Document already exists: projects/…/documents/jobs/ID"; Google's Firestore emulator says
    /// "entity already exists: EntityRef{partitionRef=dev~PROJECT, path=/jobs/ID}"). Firestore also answers 409 for an
    /// aborted commit (`ABORTED`), which is not this.
    package static func alreadyExists(_ response: HTTPResponse, name: String) -> Bool {
        guard response.status == 409, let answer = try? JSONValue.parse(response.body) else { return false }
        let message = answer.lookup("error.message")?.stringValue ?? ""
        let path = name.range(of: "/documents/").map { "path=/" + name[$0.upperBound...] + "}" }
        return answer.lookup("error.status")?.stringValue == "ALREADY_EXISTS"
            && (message.hasSuffix(name) || path.map { message.hasSuffix($0) } == true)
    }

    /// What a refused Firestore call adds to its message: for 401, that the token was refused, and where a fresh one
    /// goes: `tokenVariables`, the variables the call's Authorization header was written with (`FIREBASE_TOKEN`).
    package static func hint(status: Int, tokenVariables: [String]) -> String {
        guard status == 401 else { return "" }
        let place =
            tokenVariables.isEmpty
            ? "where the pipeline's Authorization header takes it from"
            : "\(tokenVariables.joined(separator: ", ")) (the variable the Authorization header reads)"
        return " (the ID token was refused: a Firebase ID token expires an hour after it is issued; put a fresh one "
            + "in \(place) and run again: finished files are skipped)"
    }
}

extension JSONValue {
    var arrayItems: [JSONValue]? {
        if case .array(let items) = self { return items }
        return nil
    }
}
