import ArgumentParser
import Foundation
import IngestRun

/// `--metrics-addr`, shared by `run` and `watch`: Prometheus metrics and a health check while files go through.
struct ServiceOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Serve Prometheus metrics at http://HOST:PORT/metrics and a health check at /healthz while running.",
            discussion: "A bare :PORT or PORT listens on 127.0.0.1 only; give a host (0.0.0.0:9464, [::]:9464) to "
                + "be reachable from other machines. Port 0 takes a free port; the address is printed on standard "
                + "error.",
            valueName: "host:port"))
    var metricsAddr: String?

    func validate() throws {
        if let metricsAddr {
            do {
                _ = try MetricsServer.parse(metricsAddr)
            } catch {
                throw ValidationError("\(error)")
            }
        }
    }

    /// Starts the listener (saying where on standard error); nil without `--metrics-addr`. Stop it when done.
    func start() throws -> MetricsServer? {
        guard let metricsAddr else { return nil }
        let server = try MetricsServer(address: metricsAddr, metrics: RunMetrics())
        printError("ingest: metrics at http://\(server.address)/metrics, health at http://\(server.address)/healthz")
        return server
    }
}
