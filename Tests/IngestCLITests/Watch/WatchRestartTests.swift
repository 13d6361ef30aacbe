import Foundation
import Testing

@testable import IngestCheck
@testable import IngestCore
@testable import IngestTestSupport

/// `ingest watch` run as a service that is stopped and started again: SIGTERM in the middle of uploads, then a
/// restart on the same journal, sends nothing twice.
@Suite(.serialized) struct WatchRestartTests {
    @Test func sigtermMidUploadThenARestartSendsNothingTwice() throws {
        let throttled =
            #"[{"method": "PUT", "path": "/signed/", "action": "throttle", "bytes_per_second": 50000, "times": 100}]"#
        let backend = try FixtureBackend(faults: throttled)
        let folder = try TemporaryFolder("watch-sigterm")
        defer { folder.remove() }
        try FileManager.default.createDirectory(atPath: folder.path + "/in", withIntermediateDirectories: true)
        let pipeline = try folder.file("p.yml", UploadPipelineTests.hockeyPipeline(backend.base))
        let first = try WatchProcess(folder: folder.path, pipeline: pipeline, ["--settle", "0.3s"])
        var paths: [String] = []
        // One small file the first watch finishes, two large ones it is stopped in the middle of.
        for (index, size) in [20_000, 1_000_001, 1_000_002].enumerated() {
            paths.append(
                try writeRandomFile(
                    folder.path + "/in/user\(index)/clip\(index).mov", size: size, seed: UInt64(index) + 3))
        }
        let uploading = try first.eventually {
            let done = first.reports("user0/clip0.mov").first?["status"] as? String == "passed"
            return try done && (backend.state()["arrived"] as? [[Any]] ?? []).count >= 2
        }
        #expect(uploading, "the first file was never done, or the others never started: \(first.stderr)")
        #expect(first.stop(SIGTERM) == 143, "\(first.stderr)")
        #expect(first.stderr.contains("interrupted by SIGTERM"), "\(first.stderr)")
        let interrupted = reportObjects(first.report).filter {
            (($0["failures"] as? [[String: Any]])?.first?["rule"] as? String) == "interrupted"
        }
        #expect(interrupted.count >= 1, "\(reportObjects(first.report))")
        #expect(try backend.objects().count < paths.count, "every upload finished before the SIGTERM")

        try backend.setFaults("[]")
        let second = try WatchProcess(folder: folder.path, pipeline: pipeline, ["--settle", "0.3s"])
        let stored = try second.eventually { try backend.objects().count >= paths.count }
        #expect(stored, "\(second.stderr)")
        // Each file passed once, in the first watch or the second.
        func passed(_ index: Int) -> Int {
            second.reports("user\(index)/clip\(index).mov").filter { $0["status"] as? String == "passed" }.count
        }
        #expect(second.eventually { (0..<3).allSatisfy { passed($0) >= 1 } }, "\(second.stderr)")
        #expect(second.stop(SIGTERM) == 143, "\(second.stderr)")
        let objects = try backend.objects()
        #expect(objects.count == paths.count)
        #expect(objects.values.allSatisfy { $0["count"] as? Int == 1 }, "stored more than once: \(objects)")
        #expect((0..<3).allSatisfy { passed($0) == 1 }, "\(reportObjects(second.report))")
        #expect(Set(objects.values.compactMap { $0["sha256"] as? String }) == Set(try paths.map(sha256sum)))
        let analyses = try backend.requests().filter {
            "\($0[1])".contains("/api/analyze-video") && "\($0[2])" == "200"
        }
        #expect(analyses.count == paths.count, "\(analyses)")
    }
}
