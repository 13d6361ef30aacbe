import Foundation
import Testing

@testable import Ingest

/// Issue 23 §3: `--metrics-addr` serves Prometheus text at /metrics (counts that match the report, during and after a
/// run) and /healthz (503 once the journal cannot be written), on loopback unless a host is given.
@Suite(.serialized) struct MetricsTests {
    /// `curl`'s answer: the HTTP status (0 when nothing answered) and the body.
    static func get(_ url: String) throws -> (status: Int, body: String) {
        let result = try runCommand("/usr/bin/curl", ["-s", "--max-time", "5", "-w", "\n%{http_code}", url])
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        return (Int(lines.last ?? "") ?? 0, lines.dropLast().joined(separator: "\n"))
    }

    /// The value of the sample `series` (name with its labels, as printed) in exposition text.
    static func value(_ text: String, _ series: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }

    static func runner(_ folder: TemporaryFolder, metrics: RunMetrics, journal: any JournalStore) throws -> Runner {
        let yaml = DisposalTests.pipeline("").replacingOccurrences(of: "dir: dest", with: "dir: \(folder.path)/dest")
        let pipeline = try Pipeline.parse(yaml: yaml, source: "test.yml", environment: [:])
        let settings = RunSettings(workDirectory: folder.path + "/work", environment: [:])
        return Runner(pipeline: pipeline, settings: settings, journal: journal, metrics: metrics)
    }

    @Test func scrapedDuringAndAfterARunTheCountsMatchTheReport() throws {
        let folder = try TemporaryFolder("metrics-run")
        defer { folder.remove() }
        try DisposalTests.inputs(folder)
        let server = try MetricsServer(address: "127.0.0.1:0", metrics: RunMetrics())
        defer { server.stop() }
        let journal = try SQLiteJournal(path: folder.path + "/journal.sqlite")
        let runner = try Self.runner(folder, metrics: server.metrics, journal: journal)
        let url = "http://\(server.address)"
        var during: (status: Int, body: String)?
        let summary = try runner.run(paths: [folder.path + "/in"]) { _ in
            if during == nil { during = try Self.get(url + "/metrics") }
        }
        try journal.close()
        #expect(during?.status == 200)
        #expect(during?.body.contains("# TYPE ingest_files_total counter") == true)
        #expect((Self.value(during?.body ?? "", #"ingest_files_total{outcome="passed"}"#) ?? -1) >= 0)
        let after = try Self.get(url + "/metrics")
        #expect(Self.value(after.body, #"ingest_files_total{outcome="passed"}"#) == Double(summary.passed))
        #expect(Self.value(after.body, #"ingest_files_total{outcome="failed"}"#) == Double(summary.failed))
        #expect(Self.value(after.body, #"ingest_files_total{outcome="skipped"}"#) == 0)
        #expect(summary.passed == 2 && summary.failed == 1)
        #expect(Self.value(after.body, #"ingest_stage_duration_seconds_count{stage="upload"}"#) == 2)
        #expect(Self.value(after.body, #"ingest_stage_duration_seconds_count{stage="validate"}"#) == 3)
        #expect(Self.value(after.body, #"ingest_stage_duration_seconds_bucket{stage="upload",le="+Inf"}"#) == 2)
        #expect(Self.value(after.body, "ingest_sent_bytes_total") == 7, "hello + hi")
        #expect(Self.value(after.body, "ingest_queue_depth") == 0)
        #expect((Self.value(after.body, "ingest_last_success_timestamp_seconds") ?? 0) > 1_700_000_000)
        let health = try Self.get(url + "/healthz")
        #expect(health.status == 200 && health.body.trimmingCharacters(in: .whitespacesAndNewlines) == "ok")
        #expect(try Self.get(url + "/nothing").status == 404)
    }

    @Test func requestsAndRetriesByStageAndStatusMatchTheReport() throws {
        let folder = try TemporaryFolder("metrics-requests")
        defer { folder.remove() }
        let backend = try FixtureBackend(
            faults: #"[{"method": "POST", "path": "/api/upload-url", "times": 1, "action": "status", "status": 503}]"#)
        defer { backend.stop() }
        try copySample("good/plain.mov", to: folder.path + "/in/alice/a.mov")
        try copySample("good/plain.mov", to: folder.path + "/in/bob/b.mov")
        let yaml = ChangedFileTests.pipeline(backend.base)
        let pipeline = try Pipeline.parse(yaml: yaml, source: "test.yml", environment: [:])
        let metrics = RunMetrics()
        let settings = RunSettings(workDirectory: folder.path + "/work", environment: [:])
        var expected: [String: Double] = [:]
        try Runner(pipeline: pipeline, settings: settings, metrics: metrics).run(paths: [folder.path + "/in"]) {
            report in
            #expect(report.status == .passed, "\(report.failures)")
            guard case .object(let timings)? = report.timings, case .array(let requests)? = timings["requests"] else {
                return
            }
            for case .object(let request) in requests {
                guard case .string(let stage)? = request["stage"], case .int(let status)? = request["status"],
                    case .int(let attempts)? = request["attempts"]
                else { continue }
                let labels = #"{stage="\#(stage)",status="\#(status)"}"#
                expected["ingest_requests_total" + labels, default: 0] += 1
                expected["ingest_retries_total" + labels, default: 0] += Double(attempts - 1)
            }
        }
        let text = metrics.text()
        #expect(expected[#"ingest_retries_total{stage="request",status="200"}"#] == 1, "the 503 was retried")
        for (series, count) in expected where count > 0 {
            #expect(Self.value(text, series) == count, "\(series)\n\(text)")
        }
        #expect(Self.value(text, #"ingest_files_total{outcome="passed"}"#) == 2)
    }

    /// 70 files, one worker: the journal's disk fills while the first report is handed over, so the files after it
    /// cannot journal their upload as started.
    @Test(.enabled(if: Tmpfs.available, "mounting a tmpfs needs root"))
    func healthzSays503WhenTheJournalCannotBeWritten() throws {
        let folder = try TemporaryFolder("metrics-health")
        defer { folder.remove() }
        for index in 0..<70 { try folder.file(String(format: "in/f%02d.txt", index), "hello") }
        let disk = try #require(Tmpfs(at: folder.path + "/disk", size: "512k"))
        let server = try MetricsServer(address: ":0", metrics: RunMetrics())
        defer { server.stop() }
        let journal = try SQLiteJournal(path: disk.path + "/journal.sqlite")
        var pipeline = try Self.runner(folder, metrics: server.metrics, journal: journal).pipeline
        pipeline.concurrency = 1
        let settings = RunSettings(workDirectory: folder.path + "/work", environment: [:])
        let runner = Runner(pipeline: pipeline, settings: settings, journal: journal, metrics: server.metrics)
        var reports: [ItemReport] = []
        var healthBefore = 0
        _ = try? runner.run(paths: [folder.path + "/in"]) { report in
            if reports.isEmpty {
                healthBefore = try Self.get("http://\(server.address)/healthz").status
                _ = try runCommand("/bin/dd", ["if=/dev/zero", "of=\(disk.path)/fill", "bs=4k"])
            }
            reports.append(report)
        }
        #expect(healthBefore == 200)
        #expect(reports.contains { $0.failures.contains { $0.rule == .journal } }, "a file could not be journaled")
        let health = try Self.get("http://\(server.address)/healthz")
        #expect(health.status == 503)
        #expect(health.body.contains("journal"), "\(health.body)")
        #expect(Self.value(try Self.get("http://\(server.address)/metrics").body, "ingest_healthy") == 0)
        try? journal.close()
    }

    @Test func itListensOnLoopbackUnlessAHostIsGiven() throws {
        #expect(try MetricsServer.parse("9464") == ("127.0.0.1", 9464))
        #expect(try MetricsServer.parse(":9464") == ("127.0.0.1", 9464))
        #expect(try MetricsServer.parse("0.0.0.0:9464") == ("0.0.0.0", 9464))
        #expect(try MetricsServer.parse("[::1]:0") == ("::1", 0))
        for bad in ["host:", "x:65536", "[::1]9464", "nine"] {
            #expect(throws: MetricsServerError.self, "\(bad)") { try MetricsServer.parse(bad) }
        }
        let server = try MetricsServer(address: ":0", metrics: RunMetrics())
        defer { server.stop() }
        #expect(server.address.hasPrefix("127.0.0.1:"))
        let port = server.address.split(separator: ":").last.map(String.init) ?? ""
        // Another address of this machine does not answer.
        let addresses = (try? runCommand("/bin/hostname", ["-I"]))?.stdout.split(separator: " ") ?? []
        if let other = addresses.first(where: { $0.contains(".") && !$0.hasPrefix("127.") }) {
            #expect(try Self.get("http://\(other):\(port)/metrics").status == 0)
        }
        #expect(try Self.get("http://127.0.0.1:\(port)/healthz").status == 200)
    }

    @Test func runTakesMetricsAddr() throws {
        let folder = try TemporaryFolder("metrics-cli")
        defer { folder.remove() }
        try DisposalTests.inputs(folder)
        let (result, reports) = try DisposalTests.run(folder, "", ["--metrics-addr", ":0"])
        #expect(result.stderr.contains("metrics at http://127.0.0.1:"), "\(result.stderr)")
        #expect(reports.count == 3)
        let (bad, _) = try DisposalTests.run(folder, "", ["--metrics-addr", "localhost:http"])
        #expect(bad.status == 2, "\(bad.stderr)")
    }
}
