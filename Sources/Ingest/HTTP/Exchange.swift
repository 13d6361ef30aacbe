import Foundation
import IngestNative
import Logging

/// `10/hour`, `2/s`, `100/min`, `500/day`: at most that many requests start per window.
public struct Rate: OptionValue, Sendable, Equatable, CustomStringConvertible {
    public var count: Int
    public var window: Double

    public init(count: Int, window: Double) {
        self.count = count
        self.window = window
    }

    /// Requests per window: a count past this would only hold that many start times in memory.
    public static let countRange = 1...1_000_000

    public static func parse(_ text: String) -> Rate? {
        let parts = text.replacingOccurrences(of: " ", with: "").split(separator: "/")
        guard parts.count == 2, let count = Int(parts[0]), Rate.countRange.contains(count) else { return nil }
        let units: [String: Double] = [
            "s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60, "h": 3600, "hour": 3600, "d": 86400,
            "day": 86400,
        ]
        guard let window = units[String(parts[1])] else { return nil }
        return Rate(count: count, window: window)
    }

    public init(from node: ConfigNode) throws {
        guard let text = node.scalar, let rate = Rate.parse(text) else {
            throw node.error(
                "expected a rate such as 10/hour, 2/s or 100/min (a count between \(Rate.countRange.lowerBound) and "
                    + "\(Rate.countRange.upperBound) per s, min, hour or day), found \(node.kindDescription)")
        }
        self = rate
    }

    public static var jsonSchema: JSONValue {
        ["type": "string", "pattern": "^\\s*[0-9]+\\s*/\\s*(s|sec|second|m|min|minute|h|hour|d|day)\\s*$"]
    }

    public var description: String { "\(count) per \(JSONValue.format(window)) s" }
}

/// Client-side rate limit shared by every worker running one stage: a request that would exceed it waits for
/// a free slot (the file is queued, not failed), as the seed backends' 10/hour limits require.
final class RateLimiter: @unchecked Sendable {
    let rate: Rate
    private let condition = NSCondition()
    private var starts: [Date] = []

    init(rate: Rate) { self.rate = rate }

    /// Waits for a slot; false when `cancellation` stops the run first (a 10/hour wait must not outlive Ctrl-C).
    @discardableResult
    func acquire(cancellation: RunCancellation? = nil) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if cancellation?.isCancelled == true { return false }
            let now = Date()
            starts.removeAll { now.timeIntervalSince($0) >= rate.window }
            if starts.count < rate.count {
                starts.append(now)
                return true
            }
            let wait = rate.window - now.timeIntervalSince(starts[0])
            // Woken at least every 250 ms while a cancellation could arrive.
            let slice = cancellation == nil ? max(0.01, wait) : min(0.25, max(0.01, wait))
            _ = condition.wait(until: now.addingTimeInterval(slice))
        }
    }
}

public enum HTTPVersionOption: String, OptionEnum, Sendable {
    case v1_1 = "1.1"
    case v2 = "2"
}

/// The options every network stage has: retries, pacing, TLS and timeouts.
public struct NetworkOptions: Sendable {
    public var maxAttempts = 3
    public var maxElapsed = DurationValue(seconds: 600)
    public var backoff = DurationValue(seconds: 1)
    public var rate: Rate?
    public var allowHTTP = false
    public var caBundle: String?
    public var httpVersion = HTTPVersionOption.v2
    public var connectTimeout = DurationValue(seconds: 30)
    public var lowSpeedTime = DurationValue(seconds: 60)
    public init() {}

    static func fields<Root>(_ path: WritableKeyPath<Root, NetworkOptions>) -> [OptionField<Root>] {
        [
            OptionField(
                "max_attempts", path.appending(path: \.maxAttempts), range: 1...100,
                doc: "Attempts per request, counting the first; retried on connection errors, timeouts, 5xx and 429.",
                default: "3"),
            OptionField(
                "max_elapsed", path.appending(path: \.maxElapsed),
                doc:
                    "No retry starts after this much time on one file's request, from its first attempt (retry waits "
                    + "included; time queued for a `rate` slot is not).",
                default: "600s"),
            OptionField(
                "backoff", path.appending(path: \.backoff),
                doc: "First retry delay; doubled per attempt, with full jitter, capped at 60s. `Retry-After` wins.",
                default: "1s"),
            OptionField(
                "rate", path.appending(path: \.rate),
                doc: "Client-side limit shared by all workers (`10/hour`, `2/s`): requests wait for a slot."),
            OptionField(
                "allow_http", path.appending(path: \.allowHTTP),
                doc: "Allow plain http:// to hosts other than loopback (refused by default).", default: "false"),
            OptionField(
                "ca_bundle", path.appending(path: \.caBundle), doc: "PEM file of CAs to trust instead of the system's."),
            OptionField(
                "http_version", path.appending(path: \.httpVersion),
                doc: "`2` (HTTP/2 when TLS offers it, else 1.1) or `1.1`.", default: "2"),
            OptionField(
                "connect_timeout", path.appending(path: \.connectTimeout), range: DurationValue.timeoutRange,
                doc: "Limit for connecting (DNS, TCP, TLS).", default: "30s"),
            OptionField(
                "stall_timeout", path.appending(path: \.lowSpeedTime),
                range: DurationValue(seconds: 1)...DurationValue.timeoutRange.upperBound,
                doc: "Abort an attempt when no bytes flow for this long.", default: "60s"),
        ]
    }

    func validate(at node: ConfigNode) throws {
        if maxAttempts < 1 { throw node.error("max_attempts must be at least 1, found \(maxAttempts)") }
        if lowSpeedTime.seconds < 1 { throw node.error("stall_timeout must be at least 1s") }
    }

    func apply(to request: inout HTTPRequest) {
        request.allowInsecureHTTP = allowHTTP
        request.caBundle = caBundle
        request.version = httpVersion == .v2 ? .http2 : .http1_1
        request.connectTimeout = connectTimeout.seconds
        request.lowSpeedTime = max(1, Int(lowSpeedTime.seconds))
    }
}

/// One request with retries: exponential backoff with full jitter on connection errors, timeouts, 5xx and 429,
/// honouring `Retry-After`; no retry on other statuses. Each attempt is a fresh transfer whose body restarts at
/// byte 0, built anew by the caller (a SigV4 signature is made per attempt: a retry after a long `Retry-After` must
/// not carry a stale date). Returns the last response whatever its status (the stage decides what it means).
/// A cancelled run cancels the transfer in flight and ends waits at once; the file fails as interrupted.
struct Exchange {
    let stage: String
    let options: NetworkOptions
    let limiter: RateLimiter?
    var cancellation: RunCancellation? = nil
    /// Asked before a retry whose previous attempt may have reached the server and lost its answer (the connection
    /// broke or timed out after it was made): true when the call is known to be done, and the exchange then ends by
    /// throwing `CallSettled` instead of repeating it. Throws to fail the file when that cannot be known.
    var inDoubt: (() throws -> Bool)? = nil
    /// Set in a rehearsal (`--dry-run`, `ingest test`): the request is built once and answered by it, unsent.
    var rehearsal: RehearsalTap? = nil
    /// Where `-v` events about each attempt go (see `logAttempt`); nil logs nothing.
    var logger: Logger? = nil
    /// Where each request's attempt count goes for the report; nil records nothing.
    var timings: FileTimings? = nil

    /// Thrown by `send` when `inDoubt` settled that an earlier attempt was done.
    struct CallSettled: Error {}

    struct Outcome {
        var response: HTTPResponse
        var attempts: Int
    }

    func send(_ request: HTTPRequest, observer: HTTPBodyObserver? = nil) throws -> Outcome {
        try send(observer: observer) { _ in request }
    }

    /// `makeRequest(attempt)` builds each attempt's request (attempt counts from 1).
    func send(observer: HTTPBodyObserver? = nil, makeRequest: (Int) throws -> HTTPRequest) throws -> Outcome {
        if let rehearsal { return Outcome(response: rehearsal.answer(try makeRequest(1)), attempts: 1) }
        // `max_elapsed` counts from the first attempt and leaves out time queued for a `rate` slot: in a batch paced
        // at 10/hour a file may queue for an hour before it is sent, which is no reason to retry it less.
        var started: Date?
        var queued: TimeInterval = 0
        func elapsed() -> TimeInterval { Date().timeIntervalSince(started ?? Date()) - queued }
        var attempt = 0
        var doubtful = false
        while true {
            attempt += 1
            let queuing = Date()
            if limiter?.acquire(cancellation: cancellation) == false || cancellation?.isCancelled == true {
                throw ItemFailed.interrupted(stage: stage, reason: cancellation?.reason, during: "a request's wait")
            }
            if started == nil { started = Date() } else { queued += Date().timeIntervalSince(queuing) }
            // Built (and signed) after the waits, so its date is the moment it goes out.
            let request = try makeRequest(attempt)
            func interrupted() -> ItemFailed {
                ItemFailed.interrupted(
                    stage: stage, reason: cancellation?.reason,
                    during: "\(request.method) \(Redaction.url(request.url))")
            }
            let began = Date()
            let result = perform(request, observer: observer)
            if case .failure(.cancelled) = result { throw interrupted() }
            func log(_ next: Next) { logAttempt(request, attempt: attempt, began: began, result: result, next: next) }
            let delay: Double
            switch result {
            case .success(let response):
                guard Self.isRetryable(status: response.status) else {
                    log(.done)
                    return Outcome(response: response, attempts: attempt)
                }
                let retryAfter = response.header("Retry-After").flatMap(Self.parseRetryAfter)
                delay = retryAfter ?? jitter(attempt)
                if attempt >= options.maxAttempts || elapsed() + delay > options.maxElapsed.seconds {
                    log(.givingUp(reason: giveUpReason(attempt)))
                    return Outcome(response: response, attempts: attempt)
                }
                log(.retry(delay: delay, retryAfter: retryAfter))
            case .failure(let error):
                guard error.isTransient else {
                    log(.done)
                    throw ItemFailed(
                        stage: stage, rule: Self.rule(for: error),
                        message: "\(request.method) \(Redaction.url(request.url)): \(Redaction.text(error.description))"
                    )
                }
                delay = jitter(attempt)
                if attempt >= options.maxAttempts || elapsed() + delay > options.maxElapsed.seconds {
                    log(.givingUp(reason: giveUpReason(attempt)))
                    throw ItemFailed(
                        stage: stage, rule: "network",
                        message: "\(request.method) \(Redaction.url(request.url)): \(Redaction.text(error.description))"
                            + " (after \(attempt) attempt\(attempt == 1 ? "" : "s"))")
                }
                doubtful = Self.mayHaveArrived(error)
                log(.retry(delay: delay, retryAfter: nil))
            }
            if delay > 0 {
                if let cancellation {
                    if !cancellation.sleep(delay) { throw interrupted() }
                } else {
                    Thread.sleep(forTimeInterval: delay)
                }
            }
            if doubtful, let inDoubt {
                doubtful = false
                if try inDoubt() { throw CallSettled() }
            }
        }
    }

    /// Why no retry follows a retryable answer: `3/3 attempts`, or `max_elapsed 600 s` when time ran out first.
    private func giveUpReason(_ attempt: Int) -> String {
        attempt >= options.maxAttempts
            ? "\(attempt)/\(options.maxAttempts) attempts"
            : "max_elapsed \(JSONValue.format(options.maxElapsed.seconds)) s"
    }

    /// One transfer, registered with the run's cancellation while it is in flight.
    private func perform(_ request: HTTPRequest, observer: HTTPBodyObserver?) -> Result<HTTPResponse, HTTPError> {
        switch HTTPClient.shared.start(request, observer: observer) {
        case .failure(let error): return .failure(error)
        case .success(let transfer):
            cancellation?.register(transfer)
            defer { cancellation?.unregister(transfer) }
            return transfer.wait()
        }
    }

    /// Full jitter: uniform in [0, min(cap, backoff × 2^(attempt−1))].
    private func jitter(_ attempt: Int) -> Double {
        let ceiling = min(60, options.backoff.seconds * pow(2, Double(attempt - 1)))
        return ceiling > 0 ? Double.random(in: 0...ceiling) : 0
    }

    /// A failure after the request may have been received: anything but not getting connected at all.
    static func mayHaveArrived(_ error: HTTPError) -> Bool {
        if case .curl(let curl) = error { return curl.code != CurlError.couldNotConnect }
        return false
    }

    static func isRetryable(status: Int) -> Bool { status == 429 || status == 408 || (500...599).contains(status) }

    static func rule(for error: HTTPError) -> String {
        switch error {
        case .refused: return "refused"
        case .body(.changed): return "changed"
        case .body(.unreadable): return "unreadable"
        case .cancelled: return "cancelled"
        case .incomplete: return "network"
        case .curl(let curl):
            switch curl.code {
            case CurlError.couldNotResolveHost, CurlError.couldNotResolveProxy: return "dns"
            case CurlError.sslConnectError, CurlError.peerFailedVerification: return "tls"
            default: return "network"
            }
        }
    }

    /// `Retry-After`: delay-seconds or an HTTP date (RFC 9110 §10.2.3); nil when it is neither.
    static func parseRetryAfter(_ text: String) -> Double? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let seconds = Double(trimmed), seconds.isFinite, seconds >= 0 { return seconds }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        for format in ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: trimmed) { return max(0, date.timeIntervalSinceNow) }
        }
        return nil
    }
}

/// What a server said in an error body, short: S3's `Code: Message`, a JSON `detail`/`message`/`error`, or the
/// start of the text; secrets redacted.
enum ServerMessage {
    static func of(_ response: HTTPResponse) -> String? {
        let text = response.bodyText.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { return nil }
        if text.contains("<Error>") || text.hasPrefix("<?xml") {
            let code = xmlElement("Code", in: text)
            let message = xmlElement("Message", in: text)
            if code != nil || message != nil {
                return Redaction.text([code, message].compactMap { $0 }.joined(separator: ": "))
            }
        }
        if let json = try? JSONValue.parse(response.body) {
            for path in ["detail", "message", "error.message", "error", "body.error", "errors"] {
                if let value = json.lookup(path) {
                    return Redaction.text(value.stringValue ?? value.serialized())
                }
            }
        }
        let firstLine = text.prefix(300)
        return Redaction.text(String(firstLine)) + (text.count > 300 ? "…" : "")
    }

    static func xmlElement(_ name: String, in text: String) -> String? {
        guard let open = text.range(of: "<\(name)>"),
            let close = text.range(of: "</\(name)>", range: open.upperBound..<text.endIndex)
        else { return nil }
        return String(text[open.upperBound..<close.lowerBound])
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&apos;", with: "'")
            .replacingOccurrences(of: "&amp;", with: "&")
    }

    /// "403 Forbidden" style reason phrases for the statuses a user meets.
    static func statusLine(_ status: Int) -> String {
        let phrases = [
            400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
            408: "Request Timeout", 409: "Conflict", 411: "Length Required", 412: "Precondition Failed",
            413: "Content Too Large", 415: "Unsupported Media Type", 422: "Unprocessable Content",
            429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable",
            504: "Gateway Timeout",
        ]
        return phrases[status].map { "\(status) \($0)" } ?? "\(status)"
    }
}

extension Redaction {
    /// A JSON response for reports: secret form fields (`x-amz-signature` …), tokens and signed-URL signatures
    /// replaced; templates still read the original.
    static func json(_ value: JSONValue) -> JSONValue {
        let tokenNames: Set<String> = ["token", "access_token", "refresh_token", "id_token", "password", "secret"]
        switch value {
        case .string(let text): return .string(self.text(url(text)))
        case .array(let items): return .array(items.map(json))
        case .object(let object):
            var copy = JSONObject()
            for (key, item) in object.pairs {
                if case .string(let text) = item {
                    let masked = fieldValue(name: key, value: text)
                    copy[key] = .string(
                        tokenNames.contains(key.lowercased())
                            ? placeholder : masked == text ? self.text(url(text)) : masked)
                } else {
                    copy[key] = json(item)
                }
            }
            return .object(copy)
        default: return value
        }
    }
}
