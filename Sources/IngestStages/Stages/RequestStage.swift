import Foundation
import IngestCore
import IngestNetwork
import IngestTemplates
import NativeCurl

/// `request`: one JSON HTTP call per file — a backend hands out an upload ticket (seeds 001–003) or is told that
/// a file arrived (`analyze`, `complete/{visit_id}`). The JSON response is saved under `as:` for later templates.
package struct RequestStage: Stage {
    package enum ConflictPolicy: String, OptionEnum, Sendable {
        case skip, fail, done
    }

    package struct Options: StageOptions, Sendable {
        package var method = "POST"
        package var url = Template.empty
        package var headers = HeaderTemplates()
        package var json: TemplateValue?
        package var firestore: FirestoreWrite?
        package var timeout = DurationValue(seconds: 60)
        package var expect: [Int]?
        package var onConflict = ConflictPolicy.fail
        package var report: [String] = []
        package var verify: VerifyRequest?
        package var network = NetworkOptions()
        package init() {}

        package static var fields: [OptionField<Options>] {
            [
                OptionField("method", \.method, doc: "HTTP method.", default: "POST"),
                OptionField(
                    "url", \.url, doc: "URL template (`${API}/upload/complete/{{ticket.visit_id}}`).", required: true),
                OptionField(
                    "headers", \.headers, doc: "Header templates (`Authorization: \"Bearer ${TOKEN}\"`).", default: "{}"
                ),
                OptionField(
                    "json", \.json,
                    doc:
                        "Body template sent as JSON; a string that is exactly one `{{x}}` keeps x's type (numbers, objects)."
                ),
                OptionField(
                    "firestore", \.firestore,
                    doc:
                        "Instead of `json:`, a Firestore commit (`url` ending in `documents:commit`) that creates "
                        + "`document` from plain `fields`, sets `server_timestamps`, and requires that it does not "
                        + "exist yet. Firestore's ALREADY_EXISTS for that document counts as done only when this "
                        + "file's earlier call may have made it (the journal shows it sent without an answer, or an "
                        + "attempt's answer was lost) and the document read back holds this file's `match:` fields; "
                        + "otherwise the file fails (`request.conflict`) and nothing is saved. The answer kept under "
                        + "`as:` is the document's `name` and `id`."),
                OptionField(
                    "timeout", \.timeout, range: DurationValue.timeoutRange,
                    doc: "Limit for one attempt, response included.", default: "60s"),
                OptionField("expect", \.expect, doc: "Statuses that count as success.", default: "any 2xx"),
                OptionField(
                    "on_conflict", \.onConflict,
                    doc:
                        "A 409 answer: `skip` the file (reported with the server's message; but a 409 to a call that "
                        + "may have been made before, by a run killed mid-call or an attempt whose answer was lost, "
                        + "fails the file so a later run asks again), `fail` it, or count "
                        + "the call as `done` (the file goes on; the answer is kept under `as:` and the report notes "
                        + "\"already done\" with the server's message). `done` is for callbacks whose backend "
                        + "refuses a repeat with 409 (\"already completed\"), and counts a 409 as done only when "
                        + "this file's own earlier call may have made it: the journal shows the call sent without an "
                        + "answer (a run killed mid-call), or an attempt of this run lost its answer. A 409 to a "
                        + "first call fails the file (`request.conflict`). Not for tickets, where 409 refuses the "
                        + "request.",
                    default: "fail"),
                OptionField(
                    "report", \.report,
                    doc:
                        "Fields of the answer to show in the report (`analysis.shots_detected`): stored in the fact "
                        + "`report` under their last name, and printed on the file's line of the table.",
                    default: "[]"),
                OptionField(
                    "verify", \.verify,
                    doc:
                        "A read (`url`, `headers`, `expect`, `method`, `timeout`, `settle`) sent first when the journal shows "
                        + "this call as sent without an answer (a run killed mid-call, a PostgreSQL worker whose "
                        + "lease was taken over, a run that failed it), and before a retry after an answer lost to a "
                        + "dropped connection or a timeout: an expected status counts the call as done "
                        + "(the report notes \"already done: verified by GET …: 200\", and the read's answer is kept "
                        + "under `as:` in place of the call's), a 404 makes the call, and any other answer fails "
                        + "the file with the server's message. For backends that accept a repeated call (no 409)."),
            ] + NetworkOptions.fields(\.network)
        }

        package func validate(at node: ConfigNode) throws {
            try network.validate(at: node)
            let allowed = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]
            if !allowed.contains(method.uppercased()) {
                throw node.error(
                    "method must be one of \(allowed.joined(separator: ", ")), found \(ConfigNode.echo(method))")
            }
            if json != nil && ["GET", "HEAD"].contains(method.uppercased()) {
                throw node.error("a \(method.uppercased()) request cannot carry a json body")
            }
            if firestore != nil && (json != nil || method.uppercased() != "POST") {
                throw node.error("firestore: is a POST body of its own: leave out json and method")
            }
            for status in expect ?? [] where !(100...599).contains(status) {
                throw node.error("expect: \(status) is not an HTTP status")
            }
            for path in report
            where path.isEmpty
                || path.split(separator: ".", omittingEmptySubsequences: false)
                    .contains(where: \.isEmpty)
            {
                throw node.error("report: '\(path)' is not a dotted field path such as analysis.shots_detected")
            }
        }
    }

    package static let name = "request"
    package static let summary =
        "Sends one JSON HTTP request per file (a ticket, a callback); saves the JSON answer under `as:`."
    package static let usesNetwork = true

    let options: Options
    let limiter: RateLimiter?

    package init(options: Options) throws {
        self.options = options
        limiter = options.network.rate.map(RateLimiter.init(rate:))
    }

    package func run(_ item: Item, context: StageContext) throws -> StageOutcome {
        try perform(item, context: context, verifying: context.mayHaveRunBefore)
    }

    /// A call with `verify:` that a killed run cut short is verified only once it cannot still be in flight.
    package var settleSeconds: Double? { options.verify.map { $0.settle?.seconds ?? options.timeout.seconds } }

    /// A ticket whose signed URL expired (also one from the journal of a resumed run, the likeliest to have
    /// expired) is asked for again.
    package var renewsAnswer: Bool { true }

    /// The call again, for a fresh ticket: not verified first, since the earlier call was answered.
    package func renew(_ item: Item, context: StageContext) throws -> StageOutcome {
        try perform(item, context: context)
    }

    /// `verifying`: the call may have been made before, unanswered: `verify:` is asked first (not for a renewal,
    /// whose earlier call was answered).
    func perform(_ item: Item, context: StageContext, verifying: Bool = false) throws -> StageOutcome {
        let scope = TemplateScope(item: item, context: context, stage: Self.name)
        if verifying, let verify = options.verify,
            try verifiedDone(verify, item: item, scope: scope, context: context)
        {
            return .proceed
        }
        let request = try makeRequest(scope)
        let document = try options.firestore?.commit(url: request.url, scope: scope, stage: Self.name).name
        var exchange = context.exchange(
            stage: Self.name, network: options.network, limiter: limiter, for: item,
            success: options.expect?.first ?? 200)
        let lost = LostAnswer()
        exchange.inDoubt = { [verify = options.verify] in
            lost.mark()
            // A retry after an answer lost mid-call is a repeat too: asked first.
            guard let verify else { return false }
            return try self.verifiedDone(verify, item: item, scope: scope, context: context)
        }
        let outcome: Exchange.Outcome
        do {
            outcome = try exchange.send(request)
        } catch is Exchange.CallSettled {
            return .proceed
        }
        let response = outcome.response
        let expected = options.expect.map { $0.contains(response.status) } ?? (200...299).contains(response.status)
        // A 409 counted as done: the server has this file's own call (a repeat after a crash or a lost answer).
        let alreadyDone =
            try !expected && response.status == 409
            && conflictCountsAsDone(
                outcome, to: request, document: document, mayHaveMadeIt: context.mayHaveRunBefore || lost.happened,
                item: item, scope: scope, context: context)
        if !expected && !alreadyDone {
            return try unexpectedStatus(outcome, to: request, context: context)
        }
        if alreadyDone {
            let said = ServerMessage.of(response).map { ": \($0)" } ?? ""
            item.addNote("already done: the server answered \(ServerMessage.statusLine(409))\(said)")
        }
        if let name = context.resultName, let document {
            keepFirestoreAnswer(response, name: document, as: name, on: item)
        } else if let name = context.resultName {
            try keepAnswer(response, to: request, as: name, alreadyDone: alreadyDone, on: item)
        }
        if !options.report.isEmpty {
            recordReportFields(from: (try? JSONValue.parse(response.body)).map(Redaction.json) ?? .null, on: item)
        }
        return .proceed
    }

    /// The call as the options and the file's values make it: `Accept` and (for `json:`) `Content-Type` unless the
    /// headers set them.
    private func makeRequest(_ scope: TemplateScope) throws -> HTTPRequest {
        var request = HTTPRequest(method: options.method.uppercased(), url: try options.url.renderURL(scope))
        request.headers = try options.headers.entries.map { (name: $0.name, value: try $0.value.render(scope)) }
        let hasHeader = { (name: String) in
            request.headers.contains { $0.name.caseInsensitiveCompare(name) == .orderedSame }
        }
        if !hasHeader("Accept") { request.headers.append(("Accept", "application/json")) }
        if let body = try options.firestore?.commit(url: request.url, scope: scope, stage: Self.name).body
            ?? options.json?.render(scope)
        {
            request.body = .bytes(Array(body.serialized().utf8))
            if !hasHeader("Content-Type") { request.headers.append(("Content-Type", "application/json")) }
        }
        request.timeout = options.timeout.seconds
        options.network.apply(to: &request)
        // A call checked by `verify:`, or whose 409 may count as done, is never re-sent by libcurl on its own (see
        // `freshConnection`): a re-send on a reused connection would hide an answer lost after the call arrived.
        request.freshConnection = options.verify != nil || options.firestore != nil || options.onConflict == .done
        return request
    }

    /// A status `expect:` does not allow: a 409 with `on_conflict: skip` skips the file, unless the call may be a
    /// repeat; anything else fails it.
    private func unexpectedStatus(_ outcome: Exchange.Outcome, to request: HTTPRequest, context: StageContext) throws
        -> StageOutcome
    {
        let response = outcome.response
        let said = ServerMessage.of(response).map { ": \($0)" } ?? ""
        // A 409 to a call that may have been made before (a killed run's, or an attempt whose answer was
        // lost) can be the server refusing that very call's repeat: skipping would leave the file journaled
        // as handled with nothing sent, so it fails and a later run asks again.
        let echo = response.status == 409 && (context.mayHaveRunBefore || outcome.attempts > 1)
        if response.status == 409 && options.onConflict == .skip && !echo {
            return .skip(reason: "\(ServerMessage.statusLine(409))\(said)")
        }
        let attempts = outcome.attempts > 1 ? " after \(outcome.attempts) attempts" : ""
        let why =
            echo && options.onConflict == .skip
            ? "; an earlier attempt at this call (a run killed mid-call, or an answer lost) may be what the "
                + "server refers to, so the file is failed rather than skipped: run again once that is settled "
                + "(a backend that hands out one ticket per resource may refuse another until the first expires)"
            : ""
        throw ItemFailed(
            stage: Self.name, rule: .status,
            message:
                "\(request.method) \(Redaction.url(request.url)) answered \(ServerMessage.statusLine(response.status))"
                + "\(attempts)\(said)\(why)\(credentialHint(response.status))",
            expected: options.expect.map { $0.map(String.init).joined(separator: ", ") } ?? "2xx",
            actual: String(response.status))
    }

    /// What a refused call adds: for a Firestore write, where a fresh ID token goes; otherwise the variables the
    /// headers were written with (401, 403).
    private func credentialHint(_ status: Int) -> String {
        options.firestore == nil
            ? options.headers.credentialHint(status: status)
            : Firestore.hint(status: status, tokenVariables: options.headers.variables(of: "Authorization"))
    }

    /// Keeps the answer under the `as:` name: as sent for templates, redacted for the reports; an empty answer (or
    /// a plain-text one to a 409 counted as done) as its status. An answer that is not JSON, is cut at the cap of
    /// what is kept in memory, or nests too deep for the parser fails the file, saying which.
    private func keepAnswer(
        _ response: HTTPResponse, to request: HTTPRequest, as name: String, alreadyDone: Bool, on item: Item
    ) throws {
        let text = response.bodyText.trimmingCharacters(in: .whitespacesAndNewlines)
        let parsed = Result { try JSONValue.parse(response.body) }
        if !response.truncated && (text.isEmpty || (alreadyDone && (try? parsed.get()) == nil)) {
            // A 409 that counts as done may explain itself in plain text: its status is the answer kept.
            item.facts[name] = .object(["status": .int(Int64(response.status))])
        } else if !response.truncated, case .success(let value) = parsed {
            // Templates read the answer as sent; reports get a copy without signatures and tokens.
            item.templateValues["result:" + name] = value
            item.facts[name] = Redaction.json(value)
        } else {
            let said = "\(request.method) \(Redaction.url(request.url)) answered \(response.status)"
            let why: String
            if response.truncated {
                let cap = ByteSize.format(Int64(request.maxResponseBytes))
                why = ", but the answer is larger than \(cap), the most kept in memory ('\(name)' is not saved)"
            } else if case .failure(let error as JSONParseError) = parsed, error.tooDeep {
                why = " with JSON nested deeper than \(JSONParseError.maxDepth) levels ('\(name)' is not saved)"
            } else {
                why = " with a body that is not JSON (saved as '\(name)' for later templates)"
            }
            throw ItemFailed(
                stage: Self.name, rule: .response, message: said + why,
                actual: String(Redaction.text(text).prefix(120)))
        }
    }

    /// Copies the `report:` fields of the (redacted) answer into the fact `report`, which the table prints; a field
    /// the answer lacks is recorded as null rather than failing a file whose request already succeeded.
    func recordReportFields(from answer: JSONValue, on item: Item) {
        guard !options.report.isEmpty else { return }
        var fields: JSONObject
        if case .object(let existing)? = item.facts["report"] { fields = existing } else { fields = JSONObject() }
        for path in options.report {
            let label = String(path.split(separator: ".").last ?? Substring(path))
            fields[label] = answer.lookup(path) ?? .null
        }
        item.facts["report"] = .object(fields)
    }
}
