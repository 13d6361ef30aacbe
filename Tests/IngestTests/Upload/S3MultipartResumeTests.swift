import Foundation
import NativeSQLite
import Testing

@testable import Ingest
@testable import IngestNetwork

#if canImport(Glibc)
    import Glibc
#endif

/// `kill -9` in the middle of a multipart upload to SeaweedFS, then a second run: it resumes the same upload and sends
/// only the parts S3 does not hold. The kill lands at a known point: a proxy (`backend.py --upstream`) forwards the
/// first four part PUTs and holds every later one at a gate that never opens, and the test kills once the journal
/// lists four parts. What each run sent is the proxy's log of forwarded requests; what S3 holds is its ListParts and
/// ListMultipartUploads, read with curl's own SigV4.
@Suite(.serialized) struct S3MultipartResumeTests {
    let server: SeaweedFS
    let bucket = "ingest-s3-resume"
    /// Six parts: four pass before the kill, so the resumed run has two left to send (fewer parts would not tell
    /// "only the missing ones" from "all"; more only cost time).
    static let size = 28 << 20
    static let parts = 6  // 5 MiB parts: five whole, one of 3 MiB

    init() throws {
        server = try SeaweedFS.shared()
        try server.createBucket(bucket)
    }

    /// One test's folder, proxy and pipeline (uploads under `prefix`, through the proxy).
    struct Setup {
        let folder: TemporaryFolder
        let proxy: FixtureBackend
        let prefix: String
        let pipeline: String
        let input: String
        var key: String { "\(prefix)/big.bin" }
        var journal: String { folder.path + "/.ingest/journal.sqlite" }
    }

    func setUp(_ name: String) throws -> Setup {
        let folder = try TemporaryFolder("s3-resume-\(name)")
        let prefix = "\(name)-\(UUID().uuidString.prefix(8))"
        let gate = folder.path + "/never-opened"
        let path = "/\(bucket)/\(prefix)/"
        let proxy = try FixtureBackend(
            faults: """
                [{"method": "PUT", "path": "\(path)", "action": "delay", "seconds": 0, "times": 4},
                 {"method": "PUT", "path": "\(path)", "action": "gate", "file": "\(gate)", "seconds": 600,
                  "times": 1000}]
                """, upstream: server.endpoint)
        let input = try writeRandomFile(folder.path + "/in/big.bin", size: Self.size, seed: 11)
        let pipeline = try folder.file(
            "p.yml",
            """
            version: 1
            name: resume
            stages:
              - upload:
                  method: s3
                  endpoint: \(proxy.base)
                  bucket: \(bucket)
                  access_key_id: ${S3_KEY}
                  secret_access_key: ${S3_SECRET}
                  backoff: 50ms
                  key: "\(prefix)/{{file.name}}"
                  part_size: 5MiB
                  content_type: application/octet-stream

            """)
        return Setup(folder: folder, proxy: proxy, prefix: prefix, pipeline: pipeline, input: input)
    }

    var environment: [String: String] {
        environmentWithoutProxies(["S3_KEY": server.accessKey, "S3_SECRET": server.secretKey])
    }

    /// Part rows in the journal (0 while it has none, or no such table).
    func journaledParts(_ setup: Setup) -> Int {
        guard let database = try? Database(path: setup.journal, create: false),
            let rows = try? database.prepare("SELECT COUNT(*) FROM multipart_parts").rows()
        else { return 0 }
        return Int(rows.first?.first?.int ?? 0)
    }

    /// `ingest run` killed with SIGKILL once the proxy passed four parts to S3 and holds the next at its gate, and
    /// the journal lists the four (given a few polls to write them; an ingest that journals no parts is killed
    /// all the same, and the test's other expectations say what it did).
    func killAfterFourParts(_ setup: Setup) throws {
        var polls = 0
        let path = "/\(bucket)/\(setup.key)"
        try killIngest(
            ["run", setup.pipeline, "in", "-q"], in: setup.folder.path, environment: environment,
            at: "four parts stored, the fifth held"
        ) {
            guard let state = try? setup.proxy.state(), (state["gated"] as? Int ?? 0) >= 1 else { return false }
            let requests = (state["requests"] as? [[Any]]) ?? []
            let stored = requests.filter { $0[0] as? String == "PUT" && $0[1] as? String == path }.count
            guard stored >= 4 else { return false }
            polls += 1
            return journaledParts(setup) >= 4 || polls > 40
        }
        try setup.proxy.setFaults("[]")
    }

    /// The set-up every test here shares: its folder and proxy (stopped at the end), `ingest run` killed after four
    /// parts (`killAfterFourParts`), and the one upload that leaves open on S3, whose id `body` gets.
    func withRunKilledAfterFourParts(_ name: String, _ body: (Setup, String) throws -> Void) throws {
        let setup = try setUp(name)
        defer {
            setup.proxy.stop()
            setup.folder.remove()
        }
        try killAfterFourParts(setup)
        let open = try openUploads(setup.key)
        try #require(open.count == 1, "\(open)")
        try body(setup, open[0])
    }

    /// Upload ids S3 still holds open for `key` (ListMultipartUploads).
    func openUploads(_ key: String) throws -> [String] {
        let listing = try server.curl(["\(server.endpoint)/\(bucket)?uploads="])
        #expect(listing.status == 200, "\(listing.body)")
        return listing.body.components(separatedBy: "<Upload>").dropFirst().filter {
            XMLText.element("Key", in: $0) == key
        }.compactMap { XMLText.element("UploadId", in: $0) }
    }

    /// The parts S3 holds for `uploadID` (ListParts).
    func storedParts(_ key: String, _ uploadID: String) throws -> Int {
        let listing = try server.curl(["\(server.endpoint)/\(bucket)/\(key)?uploadId=\(uploadID)"])
        return listing.body.components(separatedBy: "<Part>").count - 1
    }

    /// Requests the proxy forwarded since `start` for the test's key, as "METHOD".
    func methods(_ setup: Setup, since start: Int) throws -> [String] {
        try setup.proxy.requests().dropFirst(start).filter { ($0[1] as? String) == "/\(bucket)/\(setup.key)" }
            .compactMap { $0[0] as? String }
    }

    func run(_ setup: Setup) throws -> (CommandResult, [[String: Any]]) {
        try runIngestWithReport(setup.pipeline, ["in"], in: setup.folder.path, environment: environment)
    }

    func expectStoredCopy(_ setup: Setup, of path: String) throws {
        let downloaded = setup.folder.path + "/downloaded-\(UUID().uuidString.prefix(6))"
        let get = try server.curl(["-o", downloaded, "\(server.endpoint)/\(bucket)/\(setup.key)"])
        #expect(get.status == 200, "GET: \(get.body)")
        #expect(try sha256sum(downloaded) == (try sha256sum(path)))
    }

    /// Killed after four parts: `ingest status` shows the file as resumable, and the next run sends only the parts
    /// S3 lacks (no new CreateMultipartUpload), completes the same upload, and leaves no upload open.
    @Test func killedMidUploadResumesWithTheMissingPartsOnly() throws {
        try withRunKilledAfterFourParts("kill") { setup, uploadID in
            let stored = try storedParts(setup.key, uploadID)
            #expect(stored >= 4 && stored < Self.parts, "S3 holds \(stored) parts")
            let status = try runCommand(
                TestPaths.ingest, ["status", "--journal", setup.journal], environment: environment,
                directory: setup.folder.path)
            #expect(status.stdout.contains("resumable: \(stored) of \(Self.parts) parts stored"), "\(status.stdout)")
            #expect(status.stdout.contains("s3://\(bucket)/\(setup.key)"), "\(status.stdout)")

            let start = try setup.proxy.requests().count
            let (second, reports) = try run(setup)
            #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
            #expect(reports.first?["status"] as? String == "passed", "\(reports)")
            let sent = try methods(setup, since: start)
            // Only the missing parts, then CompleteMultipartUpload: no CreateMultipartUpload, no part sent twice.
            #expect(sent.filter { $0 == "PUT" }.count == Self.parts - stored, "\(sent)")
            #expect(sent.filter { $0 == "POST" }.count == 1, "\(sent)")
            try expectStoredCopy(setup, of: setup.input)
            #expect(try openUploads(setup.key).isEmpty)
            #expect(journaledParts(setup) == 0)
        }
    }

    /// The file is rewritten between the runs: the old upload is aborted (no parts stay billed) and a new one sent
    /// whole.
    @Test func contentChangedBetweenRunsAbortsTheOldUpload() throws {
        try withRunKilledAfterFourParts("changed") { setup, _ in
            usleep(20_000)  // a new mtime even on a coarse clock
            _ = try writeRandomFile(setup.input, size: Self.size, seed: 12)
            let start = try setup.proxy.requests().count
            let (second, _) = try run(setup)
            #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
            let sent = try methods(setup, since: start)
            #expect(sent.filter { $0 == "DELETE" }.count == 1, "the old upload was not aborted: \(sent)")
            #expect(sent.filter { $0 == "PUT" }.count == Self.parts, "\(sent)")
            try expectStoredCopy(setup, of: setup.input)
            #expect(try openUploads(setup.key).isEmpty)
        }
    }

    /// The upload is aborted behind ingest's back: ListParts answers NoSuchUpload and the next run starts over
    /// cleanly (a new upload, every part, nothing left open, nothing left journaled).
    @Test func noSuchUploadStartsOver() throws {
        try withRunKilledAfterFourParts("gone") { setup, uploadID in
            let aborted = try server.curl([
                "-X", "DELETE", "\(server.endpoint)/\(bucket)/\(setup.key)?uploadId=\(uploadID)",
            ])
            #expect(aborted.status == 204 || aborted.status == 200, "\(aborted)")
            let start = try setup.proxy.requests().count
            let (second, _) = try run(setup)
            #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
            let sent = try methods(setup, since: start)
            // After the HEAD that looks for a finished object: ListParts, answered NoSuchUpload.
            #expect(sent.first { $0 != "HEAD" } == "GET", "ListParts first: \(sent)")
            #expect(sent.filter { $0 == "PUT" }.count == Self.parts, "\(sent)")
            try expectStoredCopy(setup, of: setup.input)
            #expect(try openUploads(setup.key).isEmpty)
            #expect(journaledParts(setup) == 0)
        }
    }

    /// The resumed run fails for good (S3 refuses the next part with 403): the upload begun by the killed run is
    /// aborted, so no upload stays open, and the journal no longer offers it.
    @Test func failedForGoodAbortsTheResumedUpload() throws {
        try withRunKilledAfterFourParts("refused") { setup, _ in
            try setup.proxy.setFaults(
                #"[{"method": "PUT", "path": "/\#(bucket)/", "action": "status", "status": 403, "times": 1000}]"#)
            let (second, reports) = try run(setup)
            #expect(second.status != 0)
            let failure = (reports.first?["failures"] as? [[String: Any]])?.first
            #expect(failure?["rule"] as? String == "denied", "\(reports)")
            #expect((failure?["message"] as? String)?.contains("multipart upload aborted") == true, "\(reports)")
            #expect(try openUploads(setup.key).isEmpty)
            #expect(journaledParts(setup) == 0)
        }
    }
}
