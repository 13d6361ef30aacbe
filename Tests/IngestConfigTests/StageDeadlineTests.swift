import Foundation
import Testing

@testable import IngestConfig
@testable import IngestCore
@testable import IngestNetwork
@testable import IngestStages
@testable import IngestTestSupport

/// A stage's own deadline bounds every wait inside it: a `poll` with `timeout: 6s` whose server asks for 60 s
/// (`429` with `Retry-After: 60`) ends at 6 s by its timeout rule, naming the server's request; a `rate` slot that
/// frees only after the deadline ends there too; a `Retry-After` longer than the retry policy's `max_elapsed` still
/// fails at once naming the 429. The waits run on a `ManualClock`: the tests read how long the stage waited from
/// the clock, and take no time (Tests/Fixtures/backend.py answers).
@Suite(.serialized) struct StageDeadlineTests {
    /// The poll stage of a pipeline that polls `url` until `status: done`, with `extra` options.
    func pollStage(_ url: String, extra: String = "", in folder: TemporaryFolder) throws -> PollStage {
        let file = try folder.file(
            "poll.yml",
            """
            version: 1
            name: deadline
            stages:
              - poll:
                  url: "\(url)"
                  until: { status: [done] }
                  interval: 1s
                  timeout: 6s
                  backoff: 20ms
            \(extra.isEmpty ? "" : "      " + extra)
                  as: job

            """)
        let pipeline = try Pipeline.load(path: file, environment: [:])
        return try #require(pipeline.stages.first?.stage as? PollStage)
    }

    /// Runs `stage` for one file on `clock`; the failure it ends with.
    func failure(of stage: PollStage, clock: ManualClock) throws -> RuleFailure? {
        var settings = RunSettings(environment: [:])
        settings.clock = clock
        let item = Item(path: "/nonexistent/clip.mov", relativePath: "clip.mov", size: 0)
        do {
            _ = try stage.run(item, context: StageContext(settings: settings, resultName: "job"))
            return nil
        } catch let failed as ItemFailed {
            return failed.failures.first
        }
    }

    func gets(_ backend: FixtureBackend) throws -> Int {
        try backend.requests().filter { $0[0] as? String == "GET" && "\($0[1])".hasPrefix("/v1/") }.count
    }

    @Test func aRetryAfterPastThePollsTimeoutEndsAtTheTimeout() throws {
        let backend = try FixtureBackend(
            faults: #"[{"method": "GET", "path": "/v1/", "action": "status", "status": 429, "retry_after": "60", "#
                + #""times": 100}]"#)
        let folder = try TemporaryFolder("deadline-429")
        defer { folder.remove() }
        let url = backend.base + "/v1/jobs/1"
        let clock = ManualClock()
        let failure = try #require(try failure(of: try pollStage(url, in: folder), clock: clock))
        #expect(failure.stage == "poll" && failure.rule == .timeout, "\(failure)")
        #expect(
            failure.message
                == "gave up after 6 s (timeout 6s); the server asked to wait 60 s (GET \(url) answered 429 Too Many "
                + "Requests)", "\(failure.message)")
        #expect(clock.sleeps == [6], "the stage waited \(clock.sleeps)")
        #expect(try gets(backend) == 1)
    }

    /// `Retry-After: 3600` is past the retry policy's `max_elapsed` (600 s): no wait at all, the 429 is the answer.
    @Test func aRetryAfterPastMaxElapsedFailsAtOnceNamingThe429() throws {
        let backend = try FixtureBackend(
            faults: #"[{"method": "GET", "path": "/v1/", "action": "status", "status": 429, "retry_after": "3600", "#
                + #""times": 100}]"#)
        let folder = try TemporaryFolder("deadline-3600")
        defer { folder.remove() }
        let clock = ManualClock()
        let stage = try pollStage(backend.base + "/v1/jobs/1", in: folder)
        let failure = try #require(try failure(of: stage, clock: clock))
        #expect(failure.rule == .status, "\(failure)")
        #expect(failure.message.contains("answered 429 Too Many Requests"), "\(failure.message)")
        #expect(clock.sleeps.isEmpty, "the stage waited \(clock.sleeps)")
    }

    /// `rate: 1/hour`: the second GET's slot frees an hour after the first; the wait for it ends at the poll's
    /// 6 s timeout, naming the rate.
    @Test func aRateSlotPastThePollsTimeoutEndsAtTheTimeout() throws {
        let backend = try FixtureBackend(
            faults: #"[{"method": "GET", "path": "/v1/", "action": "status", "status": 200, "#
                + #""body": {"status": "processing"}, "times": 100}]"#)
        let folder = try TemporaryFolder("deadline-rate")
        defer { folder.remove() }
        let clock = ManualClock()
        let stage = try pollStage(backend.base + "/v1/jobs/1", extra: "rate: 1/hour", in: folder)
        let failure = try #require(try failure(of: stage, clock: clock))
        #expect(failure.stage == "poll" && failure.rule == .timeout, "\(failure)")
        #expect(
            failure.message == "gave up after 6 s (timeout 6s); waiting for a slot of rate 1/hour, free in 3594 s",
            "\(failure.message)")
        #expect(clock.sleeps == [1, 5], "the stage waited \(clock.sleeps)")
        #expect(try gets(backend) == 1)
    }

    /// Without a deadline in the way the poll still waits out a short `Retry-After` on the clock and goes on.
    @Test func aRetryAfterWithinTheTimeoutIsWaitedOut() throws {
        let backend = try FixtureBackend(
            faults: #"[{"method": "GET", "path": "/v1/", "action": "status", "status": 429, "retry_after": "2", "#
                + #""times": 1}, {"method": "GET", "path": "/v1/", "action": "status", "status": 200, "#
                + #""body": {"status": "done"}, "times": 1}]"#)
        let folder = try TemporaryFolder("deadline-short")
        defer { folder.remove() }
        let clock = ManualClock()
        #expect(try failure(of: try pollStage(backend.base + "/v1/jobs/1", in: folder), clock: clock) == nil)
        #expect(clock.sleeps == [2])
        #expect(try gets(backend) == 2)
    }

    /// An attempt's own limit is cut to what is left of the deadline (curl would otherwise wait the poll's 60 s).
    @Test func anAttemptsTimeoutIsCutToTheDeadline() {
        #expect(Exchange.timeout(60, within: 4.5) == 4.5)
        #expect(Exchange.timeout(nil, within: 4.5) == 4.5)
        #expect(Exchange.timeout(2, within: 4.5) == 2)
        #expect(Exchange.timeout(60, within: 0) == 0.001)
    }
}
