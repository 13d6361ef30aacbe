import Foundation
import IngestCore
import Logging
import NativeCurl

/// One request with retries: exponential backoff with full jitter on connection errors, timeouts, 5xx and 429,
/// honouring `Retry-After`; no retry on other statuses. Each attempt is a fresh transfer whose body restarts at
/// byte 0, built anew by the caller (a SigV4 signature is made per attempt: a retry after a long `Retry-After` must
/// not carry a stale date). Returns the last response whatever its status (the stage decides what it means).
/// A cancelled run cancels the transfer in flight and ends waits at once; the file fails as interrupted.
package struct Exchange {
    let stage: String
    let options: NetworkOptions
    let limiter: RateLimiter?
    var cancellation: RunCancellation? = nil
    /// Asked before a retry whose previous attempt may have reached the server and lost its answer (the connection
    /// broke or timed out after it was made): true when the call is known to be done, and the exchange then ends by
    /// throwing `CallSettled` instead of repeating it. Throws to fail the file when that cannot be known.
    package var inDoubt: (() throws -> Bool)? = nil
    /// Set in a rehearsal (`--dry-run`, `ingest test`): the request is built once and answered by it, unsent.
    package var rehearsal: RehearsalTap? = nil
    /// Where `-v` events about each attempt go (see `logAttempt`); nil logs nothing.
    var logger: Logger? = nil
    /// Where each request's attempt count goes for the report; nil records nothing.
    var timings: FileTimings? = nil
    /// The clock every wait reads and sleeps on (the run's: `RunSettings.clock`).
    package var clock: any WaitClock = SystemClock()
    /// The stage's own deadline (a poll's `timeout`): every wait of the exchange — a `rate` slot, a retry's backoff
    /// or `Retry-After`, the answer to an attempt — ends by it, and one that would pass it fails the file by the
    /// stage's `timeout` rule. nil: `max_elapsed` and `max_attempts` alone bound the retries.
    package var deadline: StageDeadline? = nil

    package init(
        stage: String, options: NetworkOptions, limiter: RateLimiter?, cancellation: RunCancellation? = nil,
        inDoubt: (() throws -> Bool)? = nil, rehearsal: RehearsalTap? = nil, logger: Logger? = nil,
        timings: FileTimings? = nil, clock: any WaitClock = SystemClock(), deadline: StageDeadline? = nil
    ) {
        self.stage = stage
        self.options = options
        self.limiter = limiter
        self.cancellation = cancellation
        self.inDoubt = inDoubt
        self.rehearsal = rehearsal
        self.logger = logger
        self.timings = timings
        self.clock = clock
        self.deadline = deadline
    }

    /// Thrown by `send` when `inDoubt` settled that an earlier attempt was done.
    package struct CallSettled: Error {}

    package struct Outcome {
        package var response: HTTPResponse
        package var attempts: Int
    }

    package func send(_ request: HTTPRequest, observer: HTTPBodyObserver? = nil) throws -> Outcome {
        try send(observer: observer) { _ in request }
    }

    /// `makeRequest(attempt)` builds each attempt's request (attempt counts from 1).
    package func send(observer: HTTPBodyObserver? = nil, makeRequest: (Int) throws -> HTTPRequest) throws -> Outcome {
        if let rehearsal { return Outcome(response: rehearsal.answer(try makeRequest(1)), attempts: 1) }
        var retryClock = RetryClock(clock: clock)
        var attempt = 0
        while true {
            attempt += 1
            try waitForSlot(&retryClock)
            // Built (and signed) after the waits, so its date is the moment it goes out.
            var request = try makeRequest(attempt)
            if let deadline {
                request.timeout = Self.timeout(request.timeout, within: deadline.remaining(at: clock.now))
            }
            let began = clock.now
            var hops: [RedirectHop] = []
            let result = try performFollowing(request, attempt: attempt, observer: observer, hops: &hops)
            if case .failure(.cancelled) = result { throw interrupted(during: request) }
            func log(_ next: Next) {
                logAttempt(request, attempt: attempt, began: began, result: result, next: next, hops: hops)
            }
            switch try verdict(on: result, of: request, attempt: attempt, clock: retryClock, log: log) {
            case .finished(let response):
                return Outcome(response: response, attempts: attempt)
            case .retry(let delay, let doubtful):
                if delay > 0, !clock.sleep(delay, cancellation: cancellation) { throw interrupted(during: request) }
                if doubtful, let inDoubt, try inDoubt() { throw CallSettled() }
            case .pastDeadline(let deadline, let waitingFor):
                throw try endAtDeadline(deadline, during: request, waitingFor: waitingFor)
            }
        }
    }

    /// The clock of `max_elapsed`: it counts from the first attempt and leaves out time queued for a `rate` slot (in
    /// a batch paced at 10/hour a file may queue for an hour before it is sent, which is no reason to retry it less).
    private struct RetryClock {
        let clock: any WaitClock
        var started: Double?
        var queued: Double = 0
        var elapsed: Double { clock.now - (started ?? clock.now) - queued }
    }

    /// Waits for a `rate` slot before an attempt (the wait kept off `retryClock`); throws when the run is cancelled,
    /// or when the slot frees only after the stage's deadline (the wait ends at the deadline).
    private func waitForSlot(_ retryClock: inout RetryClock) throws {
        let queuing = clock.now
        let acquired = limiter?.acquire(cancellation: cancellation, clock: clock, deadline: deadline) ?? .slot
        if acquired == .cancelled || cancellation?.isCancelled == true {
            throw ItemFailed.interrupted(stage: stage, reason: cancellation?.reason, during: "a request's wait")
        }
        if case .pastDeadline(let freesIn) = acquired, let deadline, let limiter {
            throw ItemFailed(
                stage: stage, rule: .timeout,
                message: deadline.gaveUp(
                    at: clock.now,
                    waitingFor: "waiting for a slot of rate \(limiter.rate.rangeText), free in "
                        + "\(JSONValue.format(freesIn.rounded(.up))) s"))
        }
        if retryClock.started == nil {
            retryClock.started = clock.now
        } else {
            retryClock.queued += clock.now - queuing
        }
    }

    /// Ends a wait that would pass the stage's deadline at the deadline, and returns the file's failure by the
    /// stage's timeout rule naming what it waited for (or throws when the run is cancelled meanwhile).
    private func endAtDeadline(_ deadline: StageDeadline, during request: HTTPRequest, waitingFor: String) throws
        -> ItemFailed
    {
        guard clock.sleep(until: deadline.instant, cancellation: cancellation) else {
            throw interrupted(during: request)
        }
        return ItemFailed(stage: stage, rule: .timeout, message: deadline.gaveUp(at: clock.now, waitingFor: waitingFor))
    }

    /// An attempt's own limit within what is left of the stage's deadline (at least 1 ms: curl reads 0 as none).
    static func timeout(_ own: Double?, within remaining: Double) -> Double {
        max(0.001, min(own ?? remaining, remaining))
    }

    private func interrupted(during request: HTTPRequest) -> ItemFailed {
        ItemFailed.interrupted(
            stage: stage, reason: cancellation?.reason, during: "\(request.method) \(Redaction.url(request.url))")
    }

    /// What an attempt's result leads to.
    private enum Verdict {
        /// The exchange's answer: a status not retried, or the last retryable one when retries are spent.
        case finished(HTTPResponse)
        /// Another attempt after `delay` seconds; `inDoubt` when this one may have reached the server.
        case retry(delay: Double, inDoubt: Bool)
        /// The wait before the next attempt would pass the stage's deadline; `waitingFor` says for what.
        case pastDeadline(StageDeadline, waitingFor: String)
    }

    /// Judges one attempt: an answer or error that is not retried, or retries spent (attempts or `max_elapsed`),
    /// ends the exchange (an error thrown as the file's failure); anything else is retried after a backoff.
    private func verdict(
        on result: Result<HTTPResponse, HTTPError>, of request: HTTPRequest, attempt: Int, clock retryClock: RetryClock,
        log: (Next) -> Void
    ) throws -> Verdict {
        func spent(_ delay: Double) -> Bool {
            attempt >= options.maxAttempts || retryClock.elapsed + delay > options.maxElapsed.seconds
        }
        switch result {
        case .success(let response):
            guard Self.isRetryable(status: response.status) else {
                log(.done)
                return .finished(response)
            }
            let retryAfter = response.header("Retry-After").flatMap { Self.parseRetryAfter($0, now: clock.date) }
            let delay = retryAfter ?? jitter(attempt)
            if spent(delay) {
                log(.givingUp(reason: giveUpReason(attempt)))
                return .finished(response)
            }
            let answered =
                "\(request.method) \(Redaction.url(request.url)) answered \(ServerMessage.statusLine(response.status))"
            let waitingFor =
                retryAfter != nil
                ? "the server asked to wait \(JSONValue.format(delay)) s (\(answered))"
                : "the next try was due in \(JSONValue.format(delay.rounded(.up))) s (\(answered))"
            if let past = pastDeadline(delay, waitingFor: waitingFor, log: log) { return past }
            log(.retry(delay: delay, retryAfter: retryAfter))
            return .retry(delay: delay, inDoubt: false)
        case .failure(let error):
            let failed = "\(request.method) \(Redaction.url(request.url)): \(Redaction.text(error.description))"
            guard error.isTransient else {
                log(.done)
                throw ItemFailed(stage: stage, rule: Self.rule(for: error), message: failed)
            }
            let delay = jitter(attempt)
            if spent(delay) {
                log(.givingUp(reason: giveUpReason(attempt)))
                throw ItemFailed(
                    stage: stage, rule: .network,
                    message: failed + " (after \(attempt) attempt\(attempt == 1 ? "" : "s"))")
            }
            let waitingFor = "the next try was due in \(JSONValue.format(delay.rounded(.up))) s (\(failed))"
            if let past = pastDeadline(delay, waitingFor: waitingFor, log: log) { return past }
            log(.retry(delay: delay, retryAfter: nil))
            return .retry(delay: delay, inDoubt: Self.mayHaveArrived(error))
        }
    }

    /// `.pastDeadline` when a wait of `delay` from now would pass the stage's deadline (logged as giving up).
    private func pastDeadline(_ delay: Double, waitingFor: String, log: (Next) -> Void) -> Verdict? {
        guard let deadline, deadline.passed(by: delay, at: clock.now) else { return nil }
        log(.givingUp(reason: "\(deadline.name) ends first"))
        return .pastDeadline(deadline, waitingFor: waitingFor)
    }

    /// Why no retry follows a retryable answer: `3/3 attempts`, or `max_elapsed 600 s` when time ran out first.
    private func giveUpReason(_ attempt: Int) -> String {
        attempt >= options.maxAttempts
            ? "\(attempt)/\(options.maxAttempts) attempts"
            : "max_elapsed \(JSONValue.format(options.maxElapsed.seconds)) s"
    }

    /// One transfer, registered with the run's cancellation while it is in flight (redirects are not followed).
    func perform(_ request: HTTPRequest, observer: HTTPBodyObserver?) -> Result<HTTPResponse, HTTPError> {
        var request = request
        request.sendLimiter = cancellation?.sendLimiter
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

    static func rule(for error: HTTPError) -> RuleName {
        switch error {
        case .refused: return .refused
        case .body(.changed), .body(.changedBeforeSending): return .changed
        case .body(.unreadable): return .unreadable
        case .cancelled: return .cancelled
        case .incomplete: return .network
        case .curl(let curl):
            switch curl.code {
            case CurlError.couldNotResolveHost, CurlError.couldNotResolveProxy: return .dns
            case CurlError.sslConnectError, CurlError.peerFailedVerification: return .tls
            default: return .network
            }
        }
    }

    /// `Retry-After`: delay-seconds or an HTTP date (RFC 9110 §10.2.3); nil when it is neither.
    static func parseRetryAfter(_ text: String, now: Date) -> Double? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let seconds = Double(trimmed), seconds.isFinite, seconds >= 0 { return seconds }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        for format in ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: trimmed) { return max(0, date.timeIntervalSince(now)) }
        }
        return nil
    }
}
