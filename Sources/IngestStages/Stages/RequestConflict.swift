import Foundation
import IngestCore
import IngestNetwork
import IngestTemplates
import NativeCurl

/// "Already there" answers (a 409 counted as done by `on_conflict: done`, Firestore's `ALREADY_EXISTS` for the
/// document a `firestore:` write creates) are done only when they are this file's own: its earlier call may have
/// made what the server refers to — the journal shows this stage sent for the file without an answer, or an attempt
/// of this call lost its answer — and, for Firestore, the stored document holds what this file writes (read back).
/// Otherwise the file fails with `request.conflict`, naming what exists: another file or user holds it, and saving
/// its answers as this file's would be wrong.
extension RequestStage {
    /// Set by the exchange when an attempt's answer was lost after the call may have reached the server.
    final class LostAnswer: @unchecked Sendable {
        private let lock = NSLock()
        private var lost = false
        func mark() {
            lock.lock()
            lost = true
            lock.unlock()
        }
        var happened: Bool {
            lock.lock()
            defer { lock.unlock() }
            return lost
        }
    }

    /// A 409 to `request`: true when it counts as done (the file goes on), false when it is no "already there"
    /// answer this stage knows (`on_conflict` then decides). Throws `request.conflict` when it is one, but not the
    /// file's own.
    func conflictCountsAsDone(
        _ outcome: Exchange.Outcome, to request: HTTPRequest, document: String?, mayHaveMadeIt: Bool,
        item: Item, scope: TemplateScope, context: StageContext
    ) throws -> Bool {
        let response = outcome.response
        let existing = document.flatMap { Firestore.alreadyExists(response, name: $0) ? $0 : nil }
        guard existing != nil || options.onConflict == .done else { return false }
        let said = ServerMessage.of(response).map { ": \($0)" } ?? ""
        let what = existing.map { "document \($0)" } ?? "\(request.method) \(Redaction.url(request.url))"
        guard mayHaveMadeIt else {
            throw conflict(
                "\(what): the server answered \(ServerMessage.statusLine(409))\(said) to this file's first call, so "
                    + "no earlier call of this file made what it refers to: not counted as done"
                    + (existing == nil ? "" : "; nothing was saved (give each file a document id of its own: {{uuid}})")
            )
        }
        if let existing {
            try confirmOwnDocument(existing, commit: request, scope: scope, context: context, item: item)
        }
        return true
    }

    /// Reads the Firestore document `name` back and fails the file unless its `match:` fields (default: every field
    /// written) hold what this file writes.
    private func confirmOwnDocument(
        _ name: String, commit: HTTPRequest, scope: TemplateScope, context: StageContext, item: Item
    ) throws {
        guard let write = options.firestore else { return }
        var read = HTTPRequest(method: "GET", url: Firestore.documentURL(commitURL: commit.url, name: name))
        read.headers = commit.headers.filter { $0.name.caseInsensitiveCompare("Content-Type") != .orderedSame }
        read.timeout = options.timeout.seconds
        options.network.apply(to: &read)
        let exchange = context.exchange(
            stage: Self.name, network: options.network, limiter: limiter, for: item, success: 200)
        let response = try exchange.send(read).response
        guard response.status == 200, let parsed = try? JSONValue.parse(response.body),
            case .object(let stored)? = Firestore.plainDocument(parsed)?["fields"]
        else {
            let said = ServerMessage.of(response).map { ": \($0)" } ?? ""
            throw conflict(
                "document \(name) already exists, and reading it back to see whether it is this file's answered "
                    + "\(ServerMessage.statusLine(response.status))\(said): not counted as done; run again"
                    + options.headers.credentialHint(status: response.status))
        }
        guard case .object(let written) = try write.fields.render(scope) else { return }
        let names = write.match ?? written.keys
        let differing = names.filter { name in
            guard let mine = written[name] else { return false }
            return !Self.sameValue(stored[name], mine)
        }
        guard differing.isEmpty else {
            throw conflict(
                "document \(name) already exists and is not this file's: its \(differing.joined(separator: ", ")) "
                    + "differ\(differing.count == 1 ? "s" : "") from what this file writes; nothing was saved (another "
                    + "file or user holds that id: give each file a document id of its own, such as {{uuid}})")
        }
        item.addNote("the stored document's \(names.joined(separator: ", ")) are this file's")
    }

    private func conflict(_ message: String) -> ItemFailed {
        ItemFailed(stage: Self.name, rule: .conflict, message: message)
    }

    /// Equal as JSON values go: maps by key whatever their order, whole numbers equal to the same double.
    static func sameValue(_ stored: JSONValue?, _ mine: JSONValue) -> Bool {
        switch (stored, mine) {
        case (.int(let a)?, .double(let b)), (.double(let b)?, .int(let a)): return Double(a) == b
        case (.object(let a)?, .object(let b)):
            return a.keys.count == b.keys.count && b.pairs.allSatisfy { sameValue(a[$0.0], $0.1) }
        case (.array(let a)?, .array(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { sameValue($0, $1) }
        default: return stored == mine
        }
    }
}
