import Foundation
import Testing

@testable import IngestCore
@testable import IngestJournal
@testable import IngestTestSupport

/// `kill -9` while the server holds the answer to a callback it already acted on, then a resumed run: the callback
/// was journaled as started, never as done, so it is sent again; the server refuses it with 409 and the file ends
/// done, the callback delivered once.
@Suite(.serialized) struct JournalCallbackCrashTests {
    @Test func killedWhileACallbackAnswerIsHeldThenResumed() throws {
        let backend = try FixtureBackend(
            faults: #"""
                [{"method": "POST", "path": "/api/analyze-video", "action": "act_then_hang", "seconds": 30}]
                """#)
        defer { backend.stop() }
        let folder = try TemporaryFolder("callback-kill")
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/carol/clip.mov", size: 300_000, seed: 3)
        let pipeline = try folder.file("p.yml", UploadPipelineTests.hockeyPipeline(backend.base))
        try killIngest(["run", pipeline, "in", "-q"], in: folder.path, at: "the callback") {
            (try? backend.counts("callbacks"))?["/api/analyze-video"] == 1
        }

        try backend.setFaults("[]")
        let second = try runCommand(
            TestPaths.ingest, ["run", pipeline, "in", "--report", "second.jsonl"],
            environment: environmentWithoutProxies(), directory: folder.path)
        #expect(second.status == 0, "second run: \(second.stdout)\(second.stderr)")
        #expect(try backend.objects().count == 1)
        #expect(try backend.counts("tickets") == ["/api/upload-url": 1])
        #expect(try backend.counts("callbacks") == ["/api/analyze-video": 1])
        #expect(try backend.counts("callback_repeats") == ["/api/analyze-video": 1])
        #expect(
            second.stdout.contains("(already done: the server answered 409 Conflict: Video users/carol/"),
            "\(second.stdout)")
        let line = try String(contentsOfFile: folder.path + "/second.jsonl", encoding: .utf8)
        #expect(line.contains(#""status":"passed""#), "\(line)")
        #expect(line.contains("already done: the server answered 409 Conflict"), "\(line)")
        let journal = try SQLiteJournal(path: folder.path + "/.ingest/journal.sqlite", writer: false, create: false)
        defer { try? journal.close() }
        #expect(try journal.counts() == [.done: 1])

        // The note is journaled with the file: a report rebuilt from the journal still says so.
        let rebuilt = try runCommand(
            TestPaths.ingest, ["report", "--format", "table"], environment: environmentWithoutProxies(),
            directory: folder.path)
        #expect(rebuilt.stdout.contains("already done: the server answered 409 Conflict"), "\(rebuilt.stdout)")
    }
}
