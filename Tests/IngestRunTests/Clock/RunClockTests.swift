import Foundation
import Testing

@testable import IngestConfig
@testable import IngestCore
@testable import IngestJournal
@testable import IngestRun
@testable import IngestTemplates
@testable import IngestTestSupport

/// Issue 32 §6: a file's times — when it started, its seconds and each stage's, its `{{date}}` — are read on the
/// run's clock (`RunSettings.clock`), so a run on a driven clock reports the driven times.
@Suite struct RunClockTests {
    @Test func aReportsTimesComeFromTheRunsClock() throws {
        let folder = try TemporaryFolder("run-clock")
        defer { folder.remove() }
        try folder.file("in/a.txt", "hello")
        let clock = ManualClock(date: Date(timeIntervalSince1970: 1_800_000_000))
        var settings = RunSettings(workDirectory: folder.path + "/work")
        settings.clock = clock
        let pipeline = try Pipeline.parse(
            yaml: "version: 1\nname: test\nstages:\n  - validate: { sniff: false }\n", source: "test.yml",
            environment: [:])
        var reports: [ItemReport] = []
        _ = try Runner(pipeline: pipeline, settings: settings).run(paths: [folder.path + "/in"]) { reports.append($0) }
        let report = try #require(reports.first)
        guard case .object(let timings)? = report.timings else {
            Issue.record("no timings: \(String(describing: report.timings))")
            return
        }
        #expect(timings["started"] == .string(Timestamp.string(clock.date)), "\(timings)")
        #expect(report.seconds == 0, "the clock did not move, yet the file took \(report.seconds) s")
        guard case .array(let stages)? = timings["stages"] else {
            Issue.record("no stages: \(timings)")
            return
        }
        let seconds = stages.map { stage -> JSONValue? in
            if case .object(let object) = stage { return object["seconds"] }
            return nil
        }
        #expect(!seconds.isEmpty && seconds.allSatisfy { $0 == .double(0) }, "\(stages)")
    }

    @Test func aFilesDateIsWhenItStartedOnTheRunsClock() {
        let clock = ManualClock(date: Date(timeIntervalSince1970: 1_800_000_000))
        let file = ListedFile(path: "/in/a.m4a", relativePath: "a.m4a", root: "/in", rootIndex: 0, size: 1)
        let item = Item(file: file, clock: clock)
        clock.advance(by: 86_400)
        #expect(JournalTemplate.date(of: item) == Date(timeIntervalSince1970: 1_800_000_000))
    }
}
