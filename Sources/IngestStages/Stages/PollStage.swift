import Foundation
import IngestCore
import IngestNetwork
import IngestTemplates
import Logging
import NativeCurl

/// `poll`: waits for an asynchronous job (seed 000's Firestore `jobs/{id}` moving `queued → processing →
/// summarizing → completed`): GETs a URL every `interval` (growing by half each time up to `max_interval`) until
/// `until` holds of the answer, within `timeout`. `fail_when` fails the file with the server's own words (`error`).
/// The last answer is saved under `as:` for later templates. A run killed while waiting waits for the same job next
/// time: the stage that created the job is reused from the journal, and this one runs again.
///
/// A waiting file holds its worker (a thread that sleeps, not a core): give a pipeline that polls more `workers`
/// than cores, and a shared `rate` so many files waiting at once stay within what the backend allows.
package struct PollStage: Stage {
    package enum Format: String, OptionEnum, Sendable {
        case json, firestore
    }

    package struct Options: StageOptions, Sendable {
        package var url = Template.empty
        package var headers = HeaderTemplates()
        package var format = Format.json
        package var until = FieldCondition()
        package var failWhen: FieldCondition?
        package var error = "error"
        package var progress: String?
        package var interval = DurationValue(seconds: 10)
        package var maxInterval = DurationValue(seconds: 60)
        package var timeout = DurationValue(seconds: 7200)
        package var network = NetworkOptions()
        package init() {}

        package static var fields: [OptionField<Options>] {
            [
                OptionField(
                    "url", \.url, doc: "URL template of the job (`${FIRESTORE}/v1/{{job.name}}`).", required: true),
                OptionField("headers", \.headers, doc: "Header templates (`Authorization`).", default: "{}"),
                OptionField(
                    "format", \.format,
                    doc: "`json`, or `firestore`: the answer is a Firestore document whose typed fields are read as "
                        + "plain values (`{{job.fields.status}}`, `fields.result_urls.coach_summary_url`).",
                    default: "json"),
                OptionField(
                    "until", \.until,
                    doc: "When to stop waiting: fields of the answer and the values that end the wait "
                        + "(`fields.status: [completed, failed]`); every field named must hold one of its values.",
                    required: true),
                OptionField(
                    "fail_when", \.failWhen,
                    doc: "An answer that fails the file (`fields.status: failed`), with the `error` field's words."),
                OptionField(
                    "error", \.error, doc: "The field holding the server's words when `fail_when` holds.",
                    default: "error"),
                OptionField(
                    "progress", \.progress,
                    doc: "A 0–100 field shown with the status in the live display and `-v` (`fields.progress`)."),
                OptionField(
                    "interval", \.interval, range: DurationValue(seconds: 0.05)...DurationValue(seconds: 86400),
                    doc: "Wait before the second GET; each later wait is half as long again, up to max_interval.",
                    default: "10s"),
                OptionField(
                    "max_interval", \.maxInterval, range: DurationValue(seconds: 0.05)...DurationValue(seconds: 86400),
                    doc: "Longest wait between two GETs.", default: "60s"),
                OptionField(
                    "timeout", \.timeout, range: DurationValue(seconds: 0.05)...DurationValue(seconds: 30 * 86400),
                    doc: "Longest wait for one file in one run; past it the file fails (`poll.timeout`) and the next "
                        + "run waits for the same job again.",
                    default: "2h"),
            ] + NetworkOptions.fields(\.network)
        }

        package func validate(at node: ConfigNode) throws {
            try network.validate(at: node)
            if maxInterval < interval { throw node.error("max_interval must be at least interval") }
            if error.isEmpty || progress?.isEmpty == true { throw node.error("error and progress name fields") }
        }
    }

    package static let name = "poll"
    package static let summary =
        "Waits for an asynchronous job: GETs a URL until a condition on the answer holds (the waiting file holds a "
        + "worker: a sleeping thread); saves the answer under `as:`."
    package static let usesNetwork = true

    let options: Options
    let limiter: RateLimiter?

    package init(options: Options) throws {
        self.options = options
        limiter = options.network.rate.map(RateLimiter.init(rate:))
    }

    package func run(_ item: Item, context: StageContext) throws -> StageOutcome { try wait(item, context: context) }

    /// The last answer may hold signed URLs that expire (also one from the journal of a resumed run): a later
    /// `save` refused by one has the job read again.
    package var renewsAnswer: Bool { true }

    /// GETs until `until` holds, `fail_when` holds (the file fails), or `timeout` passes. `timeout` bounds every
    /// wait of the stage, those of its GETs too (a `rate` slot, a retry's backoff or `Retry-After`).
    func wait(_ item: Item, context: StageContext) throws -> StageOutcome {
        let scope = TemplateScope(item: item, context: context, stage: Self.name)
        let clock = context.settings.clock
        let deadline = StageDeadline(
            began: clock.now, limit: options.timeout.seconds, name: "timeout \(options.timeout)")
        var pause = options.interval.seconds
        var polls = 0
        while true {
            polls += 1
            let answer = try fetch(item, scope: scope, context: context, deadline: deadline)
            let state = describe(answer)
            context.reportStatus(state)
            context.logger?.info("poll: \(state)", metadata: ["poll": .string(String(polls))])
            if let failWhen = options.failWhen, failWhen.holds(for: answer) {
                let said = answer.lookup(options.error).map { $0.stringValue ?? $0.serialized() }
                throw ItemFailed(
                    stage: Self.name, rule: .failed,
                    message: "the job ended as \(failWhen.describe(answer)): "
                        + Redaction.text(said ?? "(the answer has no '\(options.error)')"))
            }
            if options.until.holds(for: answer) || context.settings.rehearsal?.isDryRun == true { return .proceed }
            let waited = clock.now - deadline.began
            if context.settings.rehearsal != nil || deadline.passed(by: pause, at: clock.now) {
                throw ItemFailed(
                    stage: Self.name, rule: .timeout,
                    message: "the job is still \(state) after \(Timestamp.elapsed(waited)) (\(polls) GETs; "
                        + "timeout \(options.timeout)); the next run waits for the same job again",
                    expected: options.until.description, actual: state)
            }
            if !clock.sleep(pause, cancellation: context.cancellation) {
                throw ItemFailed.interrupted(
                    stage: Self.name, reason: context.cancellation?.reason, during: "a wait for the job")
            }
            pause = min(options.maxInterval.seconds, pause * 1.5)
        }
    }

    /// One GET (retried on 5xx, 429 with `Retry-After`, and dropped connections, paced by `rate`); the answer as
    /// the templates see it, kept under `as:` (signed URLs intact for templates, redacted in the facts).
    private func fetch(_ item: Item, scope: TemplateScope, context: StageContext, deadline: StageDeadline) throws
        -> JSONValue
    {
        var request = HTTPRequest(method: "GET", url: try options.url.render(scope))
        request.headers = try options.headers.entries.map { (name: $0.name, value: try $0.value.render(scope)) }
        if !request.headers.contains(where: { $0.name.caseInsensitiveCompare("Accept") == .orderedSame }) {
            request.headers.append(("Accept", "application/json"))
        }
        request.timeout = 60
        options.network.apply(to: &request)
        let exchange = context.exchange(
            stage: Self.name, network: options.network, limiter: limiter, for: item, success: 200,
            deadline: deadline)
        let outcome = try exchange.send(request)
        let response = outcome.response
        let shown = "GET \(Redaction.url(request.url))"
        guard (200...299).contains(response.status) else {
            let said = ServerMessage.of(response).map { ": \($0)" } ?? ""
            let attempts = outcome.attempts > 1 ? " after \(outcome.attempts) attempts" : ""
            throw ItemFailed(
                stage: Self.name, rule: .status,
                message: "\(shown) answered \(ServerMessage.statusLine(response.status))\(attempts)\(said)"
                    + refusalHint(response.status),
                expected: "2xx", actual: String(response.status))
        }
        let text = response.bodyText.trimmingCharacters(in: .whitespacesAndNewlines)
        if text.isEmpty && context.settings.rehearsal != nil { return .object([:]) }
        guard let parsed = try? JSONValue.parse(response.body),
            let answer = options.format == .firestore ? Firestore.plainDocument(parsed) : parsed
        else {
            throw ItemFailed(
                stage: Self.name, rule: .response,
                message: "\(shown) answered \(response.status) with a body that is not "
                    + (options.format == .firestore ? "a Firestore document" : "JSON"),
                actual: String(Redaction.text(text).prefix(120)))
        }
        if let name = context.resultName {
            item.templateValues["result:" + name] = answer
            item.facts[name] = Redaction.json(answer)
        }
        return answer
    }

    /// `processing 40%`: the job's state as `until` names it, and its progress when there is one.
    private func describe(_ answer: JSONValue) -> String {
        var state = options.until.describe(answer)
        if let field = options.progress, let progress = answer.lookup(field)?.doubleValue {
            state += " \(JSONValue.format(progress))%"
        }
        return state
    }
}

extension PollStage {
    /// What a refused read adds: for Firestore, where a fresh ID token goes; otherwise the variables the headers
    /// were written with (for 401 and 403).
    func refusalHint(_ status: Int) -> String {
        options.format == .firestore
            ? Firestore.hint(status: status, tokenVariables: options.headers.variables(of: "Authorization"))
            : options.headers.credentialHint(status: status)
    }
}
