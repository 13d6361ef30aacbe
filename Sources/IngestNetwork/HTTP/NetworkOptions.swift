import Foundation
import IngestCore
import NativeCurl

package enum HTTPVersionOption: String, OptionEnum, Sendable {
    case v1_1 = "1.1"
    case v2 = "2"
}

/// The options every network stage has: retries, pacing, TLS and timeouts.
package struct NetworkOptions: Sendable {
    package var maxAttempts = 3
    package var maxElapsed = DurationValue(seconds: 600)
    package var backoff = DurationValue(seconds: 1)
    package var rate: Rate?
    package var allowHTTP = false
    package var caBundle: String?
    package var httpVersion = HTTPVersionOption.v2
    package var connectTimeout = DurationValue(seconds: 30)
    package var lowSpeedTime = DurationValue(seconds: 60)
    package var followRedirects = RedirectPolicy.none
    /// Origins besides the stage's own URL's that its configured headers may go to (see `OriginRule`).
    package var allowOrigins: [Origin] = []
    /// Bytes per second (body out plus answer in) below which an attempt counts as stalled: a trickle of a few bytes
    /// a second is no better than silence.
    package var minSpeed = ByteSize(bytes: 1024)
    /// Limit for one whole attempt; set by stages whose `timeout` lives here (`upload`), nil for none.
    package var timeout: DurationValue?
    package init() {}

    package static func fields<Root>(_ path: WritableKeyPath<Root, NetworkOptions>) -> [OptionField<Root>] {
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
                doc:
                    "Abort an attempt when fewer than `min_speed` bytes a second flow for this long: sending the body, "
                    + "waiting for the answer (nothing flows) and receiving it.",
                default: "60s"),
            OptionField(
                "min_speed", path.appending(path: \.minSpeed), range: ByteSize(bytes: 1)...ByteSize(bytes: 1 << 30),
                doc:
                    "Bytes per second, body and answer together, below which an attempt counts as stalled "
                    + "(curl's `--speed-limit`; `stall_timeout` is its `--speed-time`): a trickle ends like silence.",
                default: "1KiB"),
            OptionField(
                "follow_redirects", path.appending(path: \.followRedirects),
                doc:
                    "A 301, 302, 303, 307 or 308 answer: `none` fails the request, naming the status and where it "
                    + "pointed; `same_origin` follows it to the same scheme, host and port only (or to an origin "
                    + "`allow_origins` names); `any` follows it anywhere, but a hop to another origin carries none of "
                    + "the configured headers. Every hop is logged (`-v`) and listed in the report; the body is sent "
                    + "again whole (a 303 turns into a GET).",
                default: "none"),
            OptionField(
                "allow_origins", path.appending(path: \.allowOrigins),
                doc:
                    "Origins (`https://uploads.example.com`) besides the one of the stage's `url` that its `headers` "
                    + "may go to when a server hands back a URL there: a redirect's target, a tus upload's "
                    + "`Location`. Any other origin gets none of them (`-v` says so).",
                default: "[]"),
        ]
    }

    package func validate(at node: ConfigNode) throws {
        if maxAttempts < 1 { throw node.error("max_attempts must be at least 1, found \(maxAttempts)") }
        if lowSpeedTime.seconds < 1 { throw node.error("stall_timeout must be at least 1s") }
    }

    package func apply(to request: inout HTTPRequest) {
        request.allowInsecureHTTP = allowHTTP
        request.caBundle = caBundle
        request.version = httpVersion == .v2 ? .http2 : .http1_1
        request.connectTimeout = connectTimeout.seconds
        request.lowSpeedTime = max(1, Int(lowSpeedTime.seconds))
        request.lowSpeedBytes = Int(minSpeed.bytes)
        if let timeout { request.timeout = timeout.seconds }
    }
}
