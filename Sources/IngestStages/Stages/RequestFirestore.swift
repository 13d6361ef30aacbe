import Foundation
import IngestCore
import IngestNetwork
import IngestTemplates
import NativeCurl

/// `firestore:` of a `request` stage: the body is a Firestore commit that creates one document from plain fields
/// (typed for Firestore here), sets server timestamps, and carries the precondition that the document does not
/// exist yet. With a document id the journal fixes for the file (`{{uuid}}`), a repeat after a crash or a lost answer
/// meets Firestore's `ALREADY_EXISTS` for that very document; it counts as done only when this file's earlier call
/// may have made it and the stored document is this file's (`RequestConflict`).
package struct FirestoreWrite: StageOptions, Sendable, Equatable {
    package var document = Template.empty
    package var fields: TemplateValue = .object([])
    package var serverTimestamps: [String] = []
    /// nil: every field of `fields`.
    package var match: [String]?
    package init() {}

    package static var fields: [OptionField<FirestoreWrite>] {
        [
            OptionField(
                "document", \.document,
                doc: "The document's path under the database (`jobs/{{uuid}}`): `{{uuid}}` is fixed per file by the "
                    + "journal, so a repeat finds its own document.",
                required: true),
            OptionField(
                "fields", \.fields,
                doc: "The fields as plain YAML values (templates allowed): sent typed (`stringValue`, "
                    + "`integerValue` …).",
                required: true),
            OptionField(
                "server_timestamps", \.serverTimestamps,
                doc: "Fields set to the server's time of the write (`setToServerValue: REQUEST_TIME`).",
                default: "[]"),
            OptionField(
                "match", \.match,
                doc: "The fields that show a stored document is this file's, when the create meets ALREADY_EXISTS "
                    + "after this file's earlier call may have made it (its answer lost, or its run killed): the "
                    + "document is read back and these fields must hold what this file writes, or the file fails "
                    + "(`request.conflict`). List the ones nothing else changes (`[userId, storagePath]`) when a "
                    + "worker updates the others (`status`, `progress`).",
                default: "every field of `fields`"),
        ]
    }

    package func validate(at node: ConfigNode) throws {
        guard case .object(let pairs) = fields else {
            throw node.error("firestore: fields must be a mapping of names to values")
        }
        for name in match ?? [] where !pairs.contains(where: { $0.key == name }) {
            throw node.error("firestore: match: '\(name)' is not one of the fields written")
        }
        if match?.isEmpty == true { throw node.error("firestore: match needs at least one field") }
        for name in serverTimestamps {
            let simple = name.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { part in
                !part.isEmpty && !(part.first?.isNumber ?? true)
                    && part.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }
            }
            if !simple {
                throw node.error("firestore: server_timestamps: '\(name)' is not a field name such as createdAt")
            }
        }
    }

    /// The commit body for the file, and the document's full name (`projects/P/databases/D/documents/jobs/ID`),
    /// taken from the commit URL (`…/v1/projects/P/databases/D/documents:commit`).
    func commit(url: String, scope: TemplateScope, stage: String) throws -> (body: JSONValue, name: String) {
        guard let root = Firestore.documentsRoot(ofCommitURL: url) else {
            throw ItemFailed(
                stage: stage, rule: .url,
                message: "firestore: the url must be a commit URL ending in "
                    + "/v1/projects/PROJECT/databases/(default)/documents:commit, found \(Redaction.url(url))")
        }
        let path = try document.render(scope)
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        guard segments.count % 2 == 0, segments.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." }) else {
            throw ItemFailed(
                stage: stage, rule: .template,
                message: "firestore: document '\(path)' is not a document path (collection/id, in pairs)")
        }
        let name = root + "/" + path
        guard case .object(let plain) = try fields.render(scope) else {
            throw scope.missing("fields", because: "it is not a mapping")
        }
        var write: JSONObject = ["update": ["name": .string(name), "fields": .object(Firestore.typedFields(plain))]]
        if !serverTimestamps.isEmpty {
            write["updateTransforms"] = .array(
                serverTimestamps.map { field -> JSONValue in
                    ["fieldPath": .string(field), "setToServerValue": "REQUEST_TIME"]
                })
        }
        write["currentDocument"] = ["exists": false]
        return (["writes": [.object(write)]], name)
    }
}

extension RequestStage {
    /// The answer kept under `as:` for a Firestore write: the document's `name` and `id` (and the commit's time),
    /// the same whether this call created it or an earlier one did (`ALREADY_EXISTS`).
    func keepFirestoreAnswer(_ response: HTTPResponse, name: String, as resultName: String, on item: Item) {
        var kept: JSONObject = [
            "name": .string(name), "id": .string(String(name.split(separator: "/").last ?? "")),
        ]
        if let commitTime = (try? JSONValue.parse(response.body))?["commitTime"] { kept["commitTime"] = commitTime }
        item.templateValues["result:" + resultName] = .object(kept)
        item.facts[resultName] = Redaction.json(.object(kept))
    }
}
