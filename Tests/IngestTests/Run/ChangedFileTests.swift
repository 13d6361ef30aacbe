import Foundation
import NativeCurl
import NativeSystem
import Testing

@testable import Ingest
@testable import IngestJournal

/// Issue 19 §2, what was checked is what is sent: an input changed after `validate` and `probe` passed — here while
/// the ticket request waits at the fixture backend's gate — fails with rule `changed` (what changed, which stage),
/// exit code 1, nothing uploaded, no `done` in the journal; the next run takes the new content through every stage.
@Suite(.serialized) struct ChangedFileTests {
    static func pipeline(_ base: String) -> String {
        """
        version: 1
        name: changed-under-us
        stages:
          - validate: { extensions: [mov], sniff: true, require: [video] }
          - probe:
          - request:
              url: \(base)/api/upload-url
              json: { user_id: "{{dir.name}}", content_type: video/mov }
              backoff: 50ms
              as: ticket
          - upload: { method: put, url: "{{ticket.upload_info.upload_url}}", content_type: video/mov, backoff: 50ms }

        """
    }

    /// One run whose first ticket request is held until `change` has been made to `in/alice/a.mov`, then a second
    /// run without the gate; returns both runs' exit codes and reports, and the first run's journal record.
    struct Outcome {
        var first: (status: Int32, report: [String: Any])
        var firstState: JournalState?
        var firstArrived: Int
        var second: (status: Int32, report: [String: Any])
        var objects: [String: [String: Any]]
        /// The input's SHA-256 once changed.
        var changedSHA256: String
    }

    func runChanging(_ change: (String) throws -> Void) throws -> Outcome {
        let folder = try TemporaryFolder("changed")
        defer { folder.remove() }
        let gate = folder.path + "/gate-open"
        let backend = try FixtureBackend(
            faults: #"[{"method": "POST", "path": "/api/upload-url", "action": "gate", "file": "\#(gate)"}]"#)
        defer { backend.stop() }
        let input = folder.path + "/in/alice/a.mov"
        try copySample("good/plain.mov", to: input)
        let pipeline = try folder.file("pipeline.yml", Self.pipeline(backend.base))
        let firstReport = folder.path + "/first.jsonl"
        let process = try startIngest(
            ["run", pipeline, folder.path + "/in", "--report", firstReport, "-q"], in: folder.path)
        var gated = false
        for _ in 0..<1000 where process.isRunning {  // bounded: about 20 s on a loaded machine
            if (try backend.state()["gated"] as? Int ?? 0) >= 1 {
                gated = true
                break
            }
            usleep(20_000)
        }
        try change(input)
        let changedSHA256 = try sha256sum(input)
        _ = FileManager.default.createFile(atPath: gate, contents: nil)
        process.waitUntilExit()
        try #require(gated, "the run never asked for its ticket")
        let arrived = (try backend.state()["arrived"] as? [Any])?.count ?? -1
        let journal = try SQLiteJournal(
            path: folder.path + "/.ingest/journal.sqlite", writer: false, create: false)
        let state = try journal.record(
            root: JournalRecord.canonicalRoot(folder.path + "/in"), relativePath: "alice/a.mov")?
            .state
        try journal.close()
        let (second, secondReports) = try runIngestWithReport(
            pipeline, [folder.path + "/in"], in: folder.path, environment: environmentWithoutProxies())
        return Outcome(
            first: (process.terminationStatus, reportObjects(firstReport).first ?? [:]), firstState: state,
            firstArrived: arrived, second: (second.status, secondReports.first ?? [:]), objects: try backend.objects(),
            changedSHA256: changedSHA256)
    }

    func failures(_ report: [String: Any]) -> [[String: Any]] { (report["failures"] as? [[String: Any]]) ?? [] }

    /// The first run failed with `changed` alone, naming `what` and the stage, sent nothing and journaled no `done`.
    func expectChangedFirstRun(_ outcome: Outcome, saying what: String) {
        #expect(outcome.first.status == 1, "\(outcome.first.report)")
        #expect(outcome.first.report["status"] as? String == "failed")
        let failure = failures(outcome.first.report).first ?? [:]
        #expect(failure["rule"] as? String == "changed", "\(outcome.first.report)")
        let message = failure["message"] as? String ?? ""
        #expect(message.contains(what), "\(message)")
        // Found after the ticket request, before the upload: the stage is named, in the field and the message.
        #expect(["request", "upload"].contains(failure["stage"] as? String ?? ""), "\(failure)")
        #expect(message.contains("stage \(failure["stage"] as? String ?? "?")"), "\(message)")
        #expect(outcome.firstArrived == 0, "a PUT reached the server")
        #expect(
            outcome.firstState != nil && outcome.firstState != .done,
            "journal: \(String(describing: outcome.firstState))")
    }

    /// `cp other tmp && mv tmp a.mov`: another file (a valid one) now has the name; the next run uploads it.
    @Test func replacedByRenameBetweenProbeAndUpload() throws {
        let outcome = try runChanging { path in
            let temporary = (path as NSString).deletingLastPathComponent + "/.tmp-replacement"
            try copySample("good/portrait.mov", to: temporary)
            try FileManager.default.removeItem(atPath: path)
            try FileManager.default.moveItem(atPath: temporary, toPath: path)
        }
        expectChangedFirstRun(outcome, saying: "replaced by another file")
        #expect(outcome.second.status == 0, "\(outcome.second.report)")
        #expect(outcome.second.report["status"] as? String == "passed", "\(outcome.second.report)")
        let stored = outcome.objects.values.first ?? [:]
        #expect(outcome.objects.count == 1)
        #expect(stored["sha256"] as? String == (try sha256sum(TestPaths.root + "/Samples/good/portrait.mov")))
    }

    /// `: > a.mov`: the validated file is now empty; the next run validates the empty file (and refuses it).
    @Test func truncatedInPlaceBetweenProbeAndUpload() throws {
        let outcome = try runChanging { path in
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            try handle.truncate(atOffset: 0)
            try handle.close()
        }
        expectChangedFirstRun(outcome, saying: "truncated (43122 → 0 bytes)")
        #expect(outcome.second.status == 1)
        let rules = failures(outcome.second.report).map { "\($0["stage"] ?? "").\($0["rule"] ?? "")" }
        #expect(rules.first?.hasPrefix("validate.") == true, "\(rules)")
        #expect(!rules.contains { $0.hasSuffix(".changed") }, "\(rules)")
        #expect(outcome.objects.isEmpty)
    }

    /// Rewritten in place, same size, the mtime put back (`touch -d`): only the ctime tells; the next run uploads
    /// the new bytes.
    @Test func rewrittenInPlaceWithTheSameSizeBetweenProbeAndUpload() throws {
        let outcome = try runChanging { path in
            let reference = path + ".times"
            #expect(try runTool("touch", ["-r", path, reference]).status == 0)
            let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
            try handle.seek(toOffset: 20_000)  // inside the mdat box: still a valid movie
            try handle.write(contentsOf: Data(repeating: 0x5A, count: 64))
            try handle.close()
            #expect(try runTool("touch", ["-r", reference, path]).status == 0)
            try FileManager.default.removeItem(atPath: reference)
        }
        expectChangedFirstRun(outcome, saying: "rewritten in place")
        #expect(outcome.second.status == 0, "\(outcome.second.report)")
        let stored = outcome.objects.values.first ?? [:]
        #expect(outcome.objects.count == 1)
        #expect(stored["size"] as? Int == 43122)
        #expect(stored["sha256"] as? String == outcome.changedSHA256)
        #expect(stored["sha256"] as? String != (try sha256sum(TestPaths.root + "/Samples/good/plain.mov")))
    }

    /// The window the runner's look before the upload cannot close: the file renamed over after that look, before
    /// the body is opened. The body is pinned to the validated file and refuses another on its descriptor, before a
    /// byte goes out.
    @Test func aBodyPinnedToTheValidatedFileRefusesOneRenamedOverIt() throws {
        let backend = try FixtureBackend()
        defer { backend.stop() }
        let folder = try TemporaryFolder("pinned-body")
        defer { folder.remove() }
        let path = try writeRandomFile(folder.path + "/a.mov", size: 100_000, seed: 4)
        let validated = try FileStatus(path: path, followLinks: true)
        try writeRandomFile(folder.path + "/b.mov", size: 100_000, seed: 5)
        try FileSystem.rename(folder.path + "/b.mov", to: path)
        let url = try HTTPClientTests().signedURL(backend, key: "p/pinned")
        let result = HTTPClient.shared.perform(
            HTTPRequest(method: "PUT", url: url, body: HTTPBody(file: .init(path: path, status: validated))))
        guard case .failure(.body(.changedBeforeSending(let what))) = result else {
            Issue.record("expected a changed-file failure, got \(result)")
            return
        }
        #expect(what.contains("replaced by another file"), "\(what)")
        #expect(try backend.objects().isEmpty)
        #expect((try backend.state()["arrived"] as? [Any])?.isEmpty == true)
    }

    /// The same window for `method: local`: a file rewritten in place (same size) after it was validated is not
    /// copied, and nothing appears at the destination.
    @Test func aLocalCopyPinnedToTheValidatedFileRefusesARewrite() throws {
        let folder = try TemporaryFolder("pinned-copy")
        defer { folder.remove() }
        let path = try writeRandomFile(folder.path + "/a.mov", size: 300_000, seed: 6)
        let validated = try FileStatus(path: path, followLinks: true)
        usleep(20_000)  // past the kernel's timestamp tick, so the rewrite moves the ctime
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        try handle.write(contentsOf: Data(repeating: 0x5A, count: 4096))
        try handle.close()
        let destination = folder.path + "/out/a.mov"
        try FileManager.default.createDirectory(atPath: folder.path + "/out", withIntermediateDirectories: true)
        let error = #expect(throws: AtomicCopy.Failure.self) {
            try AtomicCopy.copy(from: path, to: destination, replace: true, expected: validated)
        }
        #expect("\(error.map { "\($0)" } ?? "")".contains("rewritten"), "\(String(describing: error))")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path + "/out").isEmpty)
    }
}
