import Foundation
import IngestCore
import NativeSystem
import Synchronization

/// `--metrics-addr HOST:PORT`: an HTTP/1.0 responder on a thread of its own, answering `GET /metrics` (Prometheus
/// text) and `GET /healthz` (200 `ok`, or 503 and why), each connection closed after its answer. The connections
/// are served together (`PollingHTTPServer`): a client must send its whole request head within 2 s, and slow or
/// many clients cannot keep a health check waiting, nor take from the run more than this one thread.
package final class MetricsServer: Sendable {
    /// What the listener was bound to, `HOST:PORT` (the port the kernel chose when 0 was asked).
    package let address: String
    /// What it serves: give it to the run (`RunSettings.metrics`).
    package let metrics: RunMetrics
    private let control = Control()

    /// The stop flag the serving thread reads, and the signal that it has ended.
    private final class Control: Sendable {
        let stopped = Atomic<Bool>(false)
        let done = DispatchSemaphore(value: 0)
    }

    /// Parses `--metrics-addr`: `HOST:PORT`, `[IPv6]:PORT`, or `:PORT` / `PORT` for loopback (127.0.0.1): a
    /// service is reachable from other machines only when a host says so.
    package static func parse(_ text: String) throws -> (host: String, port: UInt16) {
        var host = "127.0.0.1"
        var portText = text
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw MetricsServerError(description: "--metrics-addr '\(text)': expected [IPv6]:PORT")
            }
            host = String(text[text.index(after: text.startIndex)..<close])
            portText = String(text[text.index(close, offsetBy: 2)...])
        } else if let colon = text.lastIndex(of: ":") {
            if colon != text.startIndex { host = String(text[..<colon]) }
            portText = String(text[text.index(after: colon)...])
        }
        guard let port = UInt16(portText) else {
            throw MetricsServerError(
                description: "--metrics-addr '\(text)': expected HOST:PORT with a port from 0 to 65535 (e.g. "
                    + "127.0.0.1:9464, or 0.0.0.0:9464 to listen on every interface)")
        }
        return (host, port)
    }

    /// Binds and starts serving `metrics` at once; throws when the address cannot be bound (in use, not local …).
    /// The deadlines of a connection (`limits`: its head within 2 s) are measured on `clock`: the run's.
    package init(
        address text: String, metrics: RunMetrics, clock: any WaitClock = SystemClock(),
        limits: PollingHTTPServer.Limits = PollingHTTPServer.Limits()
    ) throws {
        let (host, port) = try MetricsServer.parse(text)
        let socket: ListeningSocket
        do {
            socket = try ListeningSocket(host: host, port: port)
        } catch {
            throw MetricsServerError(description: "--metrics-addr \(text): \(error)")
        }
        address = socket.boundAddress
        self.metrics = metrics
        let thread = Thread { [control] in
            let server = PollingHTTPServer(listener: socket, limits: limits, now: { clock.now }) {
                MetricsServer.answer($0, metrics: metrics)
            }
            server.serve { !control.stopped.load(ordering: .acquiring) }
            control.done.signal()
        }
        thread.name = "ingest-metrics"
        thread.start()
    }

    /// Stops serving (within a fifth of a second) and closes the socket.
    package func stop() {
        control.stopped.store(true, ordering: .releasing)
        control.done.wait()
        control.done.signal()  // a second `stop` returns at once too
    }

    /// The answer to one request head.
    private static func answer(_ head: ArraySlice<UInt8>, metrics: RunMetrics) -> [UInt8] {
        let line = String(decoding: head, as: UTF8.self).split(separator: "\r\n").first ?? ""
        let parts = line.split(separator: " ")
        let (status, type, body): (String, String, String)
        switch (parts.first, parts.count > 1 ? parts[1].split(separator: "?").first.map(String.init) : nil) {
        case ("GET", "/metrics"?):
            (status, type, body) = ("200 OK", "text/plain; version=0.0.4; charset=utf-8", metrics.text())
        case ("GET", "/healthz"?):
            if let problem = metrics.problem {
                (status, type, body) = ("503 Service Unavailable", "text/plain; charset=utf-8", problem + "\n")
            } else {
                (status, type, body) = ("200 OK", "text/plain; charset=utf-8", "ok\n")
            }
        case ("GET", _):
            (status, type, body) = (
                "404 Not Found", "text/plain; charset=utf-8", "not found: try /metrics or /healthz\n"
            )
        default:
            (status, type, body) = ("405 Method Not Allowed", "text/plain; charset=utf-8", "only GET\n")
        }
        let bytes = Array(body.utf8)
        let header =
            "HTTP/1.0 \(status)\r\nContent-Type: \(type)\r\nContent-Length: \(bytes.count)\r\nConnection: close\r\n\r\n"
        return Array(header.utf8) + bytes
    }
}

package struct MetricsServerError: Error, Sendable, CustomStringConvertible {
    package var description: String
}
