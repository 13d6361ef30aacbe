import Foundation
import IngestCore
import Logging
import NativeCurl

/// What `-v` says about each attempt of an `Exchange`: one event as the attempt ends, naming what comes next.
extension Exchange {
    /// What follows an attempt.
    enum Next {
        /// The answer is the exchange's (any status that is not retried).
        case done
        /// Another attempt after `delay` seconds; `retryAfter` when the server's `Retry-After` set it.
        case retry(delay: Double, retryAfter: Double?)
        /// A retryable answer or error, but attempts or `max_elapsed` are spent.
        case givingUp(reason: String)
    }

    /// Logs one attempt at `info` (and its response headers at `debug`): method, redacted URL, status or error,
    /// bytes, duration, and the retry with its reason (`503 …; retry 2/3 in 2.0 s`).
    func logAttempt(
        _ request: HTTPRequest, attempt: Int, began: Double, result: Result<HTTPResponse, HTTPError>, next: Next,
        hops: [RedirectHop] = []
    ) {
        if case .retry = next {
        } else {
            var status: Int?
            if case .success(let response) = result { status = response.status }
            timings?.request(
                stage: stage, method: request.method, url: request.url, attempts: attempt, status: status,
                redirects: hops.map(\.json))
        }
        guard let logger, logger.logLevel <= .info else { return }
        let seconds = clock.now - began  // on the run's clock, as the waits are
        let url = Redaction.url(request.url)
        var fields: Logger.Metadata = [
            "method": .string(request.method), "url": .string(url), "attempt": .stringConvertible(attempt),
            "max_attempts": .stringConvertible(options.maxAttempts),
            "seconds": .stringConvertible((seconds * 1000).rounded() / 1000),
        ]
        var message = "\(request.method) \(url)"
        if let last = hops.last {
            // The answer came from where the redirects led: named, so the log says where the data went.
            fields["final_url"] = .string(Redaction.url(last.target))
            message += " (via \(hops.count) redirect\(hops.count == 1 ? "" : "s") to \(Redaction.url(last.target)))"
        }
        switch result {
        case .success(let response):
            fields["status"] = .stringConvertible(response.status)
            fields["bytes_sent"] = .stringConvertible(response.bytesSent)
            fields["bytes_received"] = .stringConvertible(response.body.count)
            message +=
                " → \(ServerMessage.statusLine(response.status)), \(ByteSize.format(response.bytesSent)) sent, "
                + "\(ByteSize.format(Int64(response.body.count))) received in \(String(format: "%.3f", seconds)) s"
        case .failure(let error):
            let text = Redaction.text(error.description)
            fields["error"] = .string(text)
            message += ": \(text) after \(String(format: "%.3f", seconds)) s"
        }
        switch next {
        case .done: break
        case .retry(let delay, let retryAfter):
            fields["retry_in"] = .stringConvertible((delay * 1000).rounded() / 1000)
            if let retryAfter {
                fields["retry_after"] = .stringConvertible(retryAfter)
                message += "; Retry-After \(JSONValue.format(retryAfter)) s"
            }
            message += "; retry \(attempt + 1)/\(options.maxAttempts) in \(String(format: "%.1f", delay)) s"
        case .givingUp(let reason):
            fields["gave_up"] = .string(reason)
            message += "; no retry: \(reason)"
        }
        logger.info("\(message)", metadata: fields)
        if case .success(let response) = result, logger.logLevel <= .debug, !response.headers.isEmpty {
            logHeaders(response, request: request, attempt: attempt)
        }
    }

    /// `-vv`: the response's headers, secret ones redacted, one `< Name: value` line each.
    private func logHeaders(_ response: HTTPResponse, request: HTTPRequest, attempt: Int) {
        guard let logger else { return }
        let headers = response.headers.map { ($0.name, Redaction.headerValue(name: $0.name, value: $0.value)) }
        var dictionary: Logger.Metadata = [:]
        for (name, value) in headers { dictionary[name.lowercased()] = .string(value) }
        // A server's header can hold ESC or a newline: escaped before it reaches a terminal.
        let lines = headers.map { "< \(TerminalText.escaped($0.0)): \(TerminalText.escaped($0.1))" }
            .joined(separator: "\n    ")
        logger.debug(
            "\(request.method) \(Redaction.url(request.url)) response headers:\n    \(lines)",
            metadata: [
                "method": .string(request.method), "url": .string(Redaction.url(request.url)),
                "attempt": .stringConvertible(attempt), "status": .stringConvertible(response.status),
                "headers": .dictionary(dictionary),
            ])
    }
}
