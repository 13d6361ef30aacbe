import Foundation
import Testing

@testable import IngestCheck
@testable import IngestCore
@testable import IngestRun
@testable import IngestTestSupport

/// Issue 23 §4: under `ingest watch`, a bad file lands in the `on_failure` folder with its report beside it, an
/// accepted one in the `on_success` folder, and the watcher keeps going: a file landing after them is still taken.
@Suite(.serialized) struct WatchDisposalTests {
    @Test func aBadFileLandsInTheFailureFolderWithItsReportAndTheWatcherKeepsGoing() throws {
        let folder = try TemporaryFolder("watch-disposal")
        defer { folder.remove() }
        try FileManager.default.createDirectory(atPath: folder.path + "/in/card", withIntermediateDirectories: true)
        try sample("voice.m4a").write(to: URL(fileURLWithPath: folder.path + "/in/first.m4a"))
        let extra = "on_success: { move_to: done }\non_failure: { move_to: failed }"
        let pipeline = try folder.file("p.yml", watchPipeline(extra: extra))
        let watch = try WatchProcess(folder: folder.path, pipeline: pipeline, ["--settle", "0.3s"])
        #expect(watch.waitForReports("first.m4a"), "\(watch.stderr)")
        // Not a recording: the probe stage fails it.
        try Data("not a movie".utf8).write(to: URL(fileURLWithPath: folder.path + "/in/card/bad.mov"))
        #expect(watch.waitForReports("card/bad.mov"), "\(watch.stderr)")
        try sample("voice.m4a").write(to: URL(fileURLWithPath: folder.path + "/in/card/after.m4a"))
        #expect(watch.waitForReports("card/after.m4a"), "the watcher stopped after the bad file: \(watch.stderr)")
        #expect(watch.stop() == 143, "\(watch.stderr)")

        #expect(watch.reports("card/bad.mov").first?["status"] as? String == "failed")
        let manager = FileManager.default
        #expect(!manager.fileExists(atPath: folder.path + "/in/card/bad.mov"), "the bad file stayed in the inbox")
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: folder.path + "/failed/card/bad.mov")) == Data("not a movie".utf8)
        )
        let beside = try Data(contentsOf: URL(fileURLWithPath: folder.path + "/failed/card/bad.mov.report.json"))
        let report = try #require(try JSONSerialization.jsonObject(with: beside) as? [String: Any])
        #expect(report["status"] as? String == "failed", "\(report)")
        #expect(!((report["failures"] as? [[String: Any]]) ?? []).isEmpty, "\(report)")
        // Accepted files moved once uploaded, the tree kept; each reported once.
        #expect(manager.fileExists(atPath: folder.path + "/done/first.m4a"))
        #expect(manager.fileExists(atPath: folder.path + "/done/card/after.m4a"))
        #expect(manager.fileExists(atPath: folder.path + "/out/after.m4a"))
        #expect(watch.reports("card/after.m4a").count == 1 && watch.reports("card/bad.mov").count == 1)
    }
}
