import Foundation
import Testing

@testable import IngestCore
@testable import IngestRun
@testable import IngestTestSupport

/// Issue 29 §6: the metrics port cannot stall health checks. Slow clients (`Tests/Fixtures/slow_clients.py`: a
/// request line, then a header line every half second, never the blank line) hold connections while a health check
/// asks `/healthz` every second with 5 s to answer; the server must cut each slow client off (its whole head within
/// 2 s) and answer every check meanwhile, however many slow clients there are.
@Suite(.serialized) struct MetricsSlowClientTests {
    struct Outcome {
        /// Seconds after its start that the server closed each slow client; nil: it never did.
        var closed: [Double?]
        var unconnected: Int
        /// Each check's HTTP status (0: no answer within 5 s) and seconds to its answer.
        var probes: [(status: Int, seconds: Double)]
    }

    /// Runs the slow clients against a fresh server for `seconds`.
    static func slowClients(_ count: Int, seconds: Double) throws -> Outcome {
        let server = try MetricsServer(address: "127.0.0.1:0", metrics: RunMetrics())
        defer { server.stop() }
        let port = server.address.split(separator: ":").last.map(String.init) ?? ""
        let result = try runCommand(
            "/usr/bin/env",
            [
                "python3", TestPaths.root + "/Tests/Fixtures/slow_clients.py", "--port", port, "--clients",
                String(count), "--seconds", String(seconds),
            ])
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
            "slow_clients.py: \(result.stderr)")
        let probes = (object["probes"] as? [[String: Any]] ?? []).map {
            (status: $0["status"] as? Int ?? -1, seconds: $0["seconds"] as? Double ?? -1)
        }
        return Outcome(
            closed: (object["closed"] as? [Any] ?? []).map { $0 as? Double },
            unconnected: object["unconnected"] as? Int ?? -1,
            probes: probes)
    }

    @Test func aClientTricklingItsHeadIsCutOff() throws {
        let outcome = try Self.slowClients(1, seconds: 6)
        #expect(outcome.unconnected == 0)
        // A line every half second: a limit on each read never ends it, a limit on the whole head does.
        #expect(outcome.closed.count == 1 && outcome.closed.allSatisfy { $0 != nil }, "\(outcome.closed)")
        #expect(!outcome.probes.isEmpty && outcome.probes.allSatisfy { $0.status == 200 }, "\(outcome.probes)")
    }

    @Test(arguments: [50, 150])
    func healthzAnswersWhileSlowClientsHoldConnections(clients: Int) throws {
        let outcome = try Self.slowClients(clients, seconds: 5)
        #expect(outcome.unconnected == 0)
        #expect(outcome.probes.count >= 3, "\(outcome.probes)")
        #expect(outcome.probes.allSatisfy { $0.status == 200 }, "\(outcome.probes)")
        #expect(outcome.closed.allSatisfy { $0 != nil }, "slow clients never cut off: \(outcome.closed)")
        let slowest = outcome.probes.map(\.seconds).max() ?? -1
        print("healthz with \(clients) slow clients: \(outcome.probes.count) checks, slowest answer \(slowest) s")
    }
}
