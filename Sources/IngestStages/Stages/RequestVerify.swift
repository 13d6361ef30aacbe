import Foundation
import IngestCore
import IngestNetwork
import IngestTemplates
import NativeCurl

/// `verify:` of a `request` stage: a read that tells whether a call the journal shows as sent without an answer (a
/// run killed mid-call, a worker whose lease was taken over, an earlier run that failed it) reached the server. A
/// backend that accepts a repeated call (no 409) would otherwise act twice; the answer settles it instead of a guess.
package struct VerifyRequest: StageOptions, Sendable, Equatable {
    package var method = "GET"
    package var url = Template.empty
    package var headers = HeaderTemplates()
    package var expect: [Int]?
    package var timeout = DurationValue(seconds: 60)
    /// nil: the call's own `timeout`.
    package var settle: DurationValue?
    package init() {}

    package static var fields: [OptionField<VerifyRequest>] {
        [
            OptionField("method", \.method, doc: "`GET` or `HEAD`.", default: "GET"),
            OptionField(
                "url", \.url,
                doc: "URL template of a read that answers once the call was done "
                    + "(`${API}/audio/playback/{{ticket.visit_id}}`).",
                required: true),
            OptionField(
                "headers", \.headers,
                doc: "Header templates (the stage's own `headers:` are not sent with it).", default: "{}"),
            OptionField(
                "expect", \.expect,
                doc: "Statuses that mean the call was done; 404 means it was not (it is made), anything else fails "
                    + "the file with the server's answer.",
                default: "any 2xx"),
            OptionField(
                "timeout", \.timeout, range: DurationValue.timeoutRange,
                doc: "Limit for one attempt, response included.", default: "60s"),
            OptionField(
                "settle", \.settle,
                doc: "How long after its journaled start a call cut short by a killed run may still be in flight (the "
                    + "server still handling it): the file waits until then before this read is sent, so a call "
                    + "still under way is not taken for one never made; other files go on meanwhile, and `-v` says "
                    + "why a file waits.",
                default: "the call's `timeout`, the longest the killed run would have waited"),
        ]
    }

    package func validate(at node: ConfigNode) throws {
        if !["GET", "HEAD"].contains(method.uppercased()) {
            throw node.error("verify: method must be GET or HEAD (a read), found '\(method)'")
        }
        for status in expect ?? [] {
            if !(100...599).contains(status) { throw node.error("verify: expect: \(status) is not an HTTP status") }
            if status == 404 {
                throw node.error("verify: expect cannot list 404: a 404 means the call was not done, so it is made")
            }
        }
        if expect?.isEmpty == true { throw node.error("verify: expect needs at least one status") }
    }

    func isExpected(_ status: Int) -> Bool { expect.map { $0.contains(status) } ?? (200...299).contains(status) }
}

extension RequestStage {
    /// Sends the stage's `verify:` request before a call that may have been made already (journaled as started or
    /// failed, or an attempt of this run whose answer was lost). True when the server
    /// shows the call done (an expected status): the file goes on without repeating it, the report notes it, and the
    /// verify answer is kept under `as:` in place of the call's. False on a 404 (the call is then made). Any other
    /// answer, or no answer, fails the file: whether the call was done is unknown, and repeating it could act twice.
    func verifiedDone(_ verify: VerifyRequest, item: Item, scope: TemplateScope, context: StageContext) throws -> Bool {
        let method = verify.method.uppercased()
        var request = HTTPRequest(method: method, url: try verify.url.renderURL(scope))
        request.headers = try verify.headers.entries.map { (name: $0.name, value: try $0.value.render(scope)) }
        if !request.headers.contains(where: { $0.name.caseInsensitiveCompare("Accept") == .orderedSame }) {
            request.headers.append(("Accept", "application/json"))
        }
        request.timeout = verify.timeout.seconds
        options.network.apply(to: &request)
        let shown = "\(method) \(Redaction.url(request.url))"
        let exchange = context.exchange(
            stage: Self.name, network: options.network, limiter: limiter, for: item,
            success: verify.expect?.first ?? 200)
        let outcome: Exchange.Outcome
        do {
            outcome = try exchange.send(request)
        } catch let failed as ItemFailed where !failed.failures.contains(where: { $0.rule == .interrupted }) {
            throw ItemFailed(
                stage: Self.name, rule: .verify,
                message: "an earlier call may have reached the server unanswered, and verifying it failed: "
                    + failed.failures.map(\.message).joined(separator: "; ") + "; not repeated: run again")
        }
        let response = outcome.response
        if response.status == 404 && !verify.isExpected(404) { return false }
        guard verify.isExpected(response.status) else {
            let said = ServerMessage.of(response).map { ": \($0)" } ?? ""
            let attempts = outcome.attempts > 1 ? " after \(outcome.attempts) attempts" : ""
            throw ItemFailed(
                stage: Self.name, rule: .verify,
                message: "an earlier call may have reached the server unanswered; \(shown) answered "
                    + "\(ServerMessage.statusLine(response.status))\(attempts)\(said), which says neither done nor "
                    + "not done (404), so the call is not repeated: run again once the server answers",
                expected: verify.expect.map { $0.map(String.init).joined(separator: ", ") } ?? "2xx or 404",
                actual: String(response.status))
        }
        item.addNote("already done: verified by \(shown): \(response.status)")
        if let name = context.resultName {
            if let value = try? JSONValue.parse(response.body), !response.body.isEmpty {
                item.templateValues["result:" + name] = value
                item.facts[name] = Redaction.json(value)
            } else {
                item.facts[name] = .object(["status": .int(Int64(response.status))])
            }
        }
        if !options.report.isEmpty {
            recordReportFields(from: (try? JSONValue.parse(response.body)).map(Redaction.json) ?? .null, on: item)
        }
        return true
    }
}
