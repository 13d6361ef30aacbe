import Foundation
import IngestCore
import NativeCurl

/// `follow_redirects`: what a network stage does with a 301, 302, 303, 307 or 308. libcurl never follows on its own
/// (it re-sent a whole upload to another origin with every configured header but `Authorization` and `Cookie`);
/// `Exchange` reads the `Location`, decides by this policy, and re-issues the request itself.
package enum RedirectPolicy: String, OptionEnum, Sendable {
    /// A redirect fails the request, naming the status and where it pointed.
    case none
    /// Followed to the same scheme, host and port only (or to an origin `allow_origins` names).
    case sameOrigin = "same_origin"
    /// Followed anywhere; a hop to another origin (one `allow_origins` does not name) carries none of the configured
    /// headers.
    case any
}

/// One redirect an exchange met: the answer's status, the request it answered and where it pointed.
struct RedirectHop {
    static let statuses: Set<Int> = [301, 302, 303, 307, 308]
    /// Hops followed for one attempt before it fails (curl's old `CURLOPT_MAXREDIRS`).
    static let limit = 5

    var status: Int
    var from: HTTPRequest
    /// The `Location`, resolved against the URL it answered.
    var target: String

    /// The hop a response makes, or nil when it is not a redirect (or names no target).
    init?(_ response: HTTPResponse, to request: HTTPRequest) {
        guard Self.statuses.contains(response.status), let location = response.header("Location"),
            !location.isEmpty, let base = URL(string: request.url),
            let resolved = URL(string: location, relativeTo: base)?.absoluteString
        else { return nil }
        status = response.status
        from = request
        target = resolved
    }

    var crossesOrigin: Bool { Origin(of: target) != Origin(of: from.url) }

    /// The request sent to the target: a 303 turns into a GET without a body (RFC 9110 §15.4.4); the others keep
    /// method and body, re-sent from byte 0. A target `rule` does not permit gets none of the configured headers:
    /// only the `Content-Type` that describes the body goes along.
    func next(under rule: OriginRule) -> HTTPRequest {
        var request = from
        request.url = target
        if status == 303 && request.method != "HEAD" {
            request.method = "GET"
            request.body = nil
        }
        if !rule.permits(target) {
            request.headers = request.body == nil ? [] : from.headers.filter { $0.name.lowercased() == "content-type" }
        }
        return request
    }

    /// `307 Temporary Redirect to https://b.example:8443/path?… (another origin)`, the URL redacted.
    var described: String {
        "\(ServerMessage.statusLine(status)) to \(Redaction.url(target))"
            + (crossesOrigin ? " (another origin, \(Origin(of: target)))" : " (same origin)")
    }

    /// For the report: `{"status": 307, "url": "…", "cross_origin": true}`.
    var json: JSONValue {
        .object([
            "status": .int(Int64(status)), "url": .string(Redaction.url(target)), "cross_origin": .bool(crossesOrigin),
        ])
    }
}

extension Exchange {
    /// One attempt and the redirects it meets, followed as `follow_redirects` allows. Returns the last answer (or
    /// error) with the hops followed; a redirect the policy does not allow, or one past `RedirectHop.limit`, fails
    /// the file, naming the status and the target's origin. Every hop is logged (`-v`).
    func performFollowing(
        _ request: HTTPRequest, attempt: Int, observer: HTTPBodyObserver?, hops: inout [RedirectHop]
    ) throws -> Result<HTTPResponse, HTTPError> {
        var current = request
        let rule = OriginRule(configuredFor: request.url, allowing: options.allowOrigins)
        hops = []
        while true {
            let result = perform(current, observer: observer)
            guard case .success(let response) = result, let hop = RedirectHop(response, to: current) else {
                return result
            }
            hops.append(hop)
            let shown = "\(request.method) \(Redaction.url(request.url))"
            if let refusal = refusal(of: hop, count: hops.count, rule: rule) {
                logHop(hop, followed: false)
                timings?.request(
                    stage: stage, method: request.method, url: request.url, attempts: attempt, status: hop.status,
                    redirects: hops.map(\.json))
                throw ItemFailed(
                    stage: stage, rule: .redirect,
                    message: "\(shown)\(hops.count > 1 ? " (after \(hops.count - 1) redirects)" : "") answered "
                        + "\(hop.described): not followed, \(refusal)")
            }
            logHop(hop, followed: true, withHeaders: hops.allSatisfy { rule.permits($0.target) })
            current = hop.next(under: rule)
        }
    }

    /// Why `hop` is not followed, or nil.
    private func refusal(of hop: RedirectHop, count: Int, rule: OriginRule) -> String? {
        switch options.followRedirects {
        case .none:
            return "as follow_redirects is none (set same_origin or any in the pipeline to follow it)"
        case .sameOrigin where !rule.permits(hop.target):
            return "as follow_redirects is same_origin (any would follow it, without the configured headers; "
                + "allow_origins would follow it with them)"
        case .sameOrigin, .any:
            if count > RedirectHop.limit { return "more than \(RedirectHop.limit) redirects in a row" }
            if let refused = HTTPClient.refusal(for: hop.next(under: rule)) { return refused }
            return nil
        }
    }

    /// `-v`: `PUT https://a/x → 307 Temporary Redirect to https://b:8443/x (another origin, …): followed, …`.
    /// `withHeaders`: the request to the target still carries the configured headers.
    private func logHop(_ hop: RedirectHop, followed: Bool, withHeaders: Bool = true) {
        guard let logger, logger.logLevel <= .info else { return }
        let what =
            !followed
            ? "not followed (follow_redirects: \(options.followRedirects.rawValue))"
            : !hop.crossesOrigin
                ? "followed (follow_redirects: \(options.followRedirects.rawValue))"
                : withHeaders
                    ? "followed with the configured headers (allow_origins names it)"
                    : "followed without the configured headers (follow_redirects: any)"
        logger.info(
            "\(hop.from.method) \(Redaction.url(hop.from.url)) → \(hop.described): \(what)",
            metadata: [
                "method": .string(hop.from.method), "url": .string(Redaction.url(hop.from.url)),
                "status": .stringConvertible(hop.status), "location": .string(Redaction.url(hop.target)),
                "followed": .stringConvertible(followed), "cross_origin": .stringConvertible(hop.crossesOrigin),
            ])
    }
}
