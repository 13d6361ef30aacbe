import Foundation
import NativeSystem
import Testing

@testable import Ingest
@testable import IngestNetwork

/// Issue #29 §8: no multipart upload left open by a CreateMultipartUpload whose answer was lost. The proxy in front
/// of SeaweedFS passes the create to S3 and resets the connection instead of relaying S3's answer (S3 made the upload,
/// the client never learns its id), or the journal holds a create's intent whose answer a killed run never journaled.
/// Either way the uploads that create left are aborted; an upload another client opened on the same key earlier is
/// left alone.
@Suite(.serialized) struct S3MultipartCreateTests {
    let server: SeaweedFS
    let bucket = "ingest-s3-create"

    init() throws {
        server = try SeaweedFS.shared()
        try server.createBucket(bucket)
    }

    func uploader(_ endpoint: String, journal: UploadJournal?) throws -> S3Uploader {
        var options = S3UploadOptions()
        options.bucket = bucket
        options.endpoint = endpoint
        options.accessKeyID = server.accessKey
        options.secretAccessKey = server.secretKey
        options.region = server.region
        options.partSize = ByteSize(bytes: 5 << 20)
        var network = NetworkOptions()
        network.backoff = DurationValue(seconds: 0.05)
        return try S3Uploader(stage: "upload", options: options, network: network, limiter: nil, environment: [:])
            .resuming(journal)
    }

    /// Upload ids S3 holds open for exactly `key`.
    func openUploads(_ key: String) throws -> [String] {
        let listing = try server.curl(["\(server.endpoint)/\(bucket)?uploads="])
        #expect(listing.status == 200, "\(listing.body)")
        return S3Uploader.openUploads(in: listing.body).filter { $0.key == key }.map(\.uploadID)
    }

    /// Another client's upload on `key`, opened before this test's run: then the clock moves past the window's margin.
    func foreignUpload(_ key: String) throws -> String {
        let created = try server.curl(["-X", "POST", "\(server.endpoint)/\(bucket)/\(key)?uploads="])
        let id = try #require(XMLText.element("UploadId", in: created.body), "\(created.body)")
        Thread.sleep(forTimeInterval: S3Uploader.sweepMargin + 2.5)
        return id
    }

    func expectStored(_ key: String, equal input: String, in folder: TemporaryFolder) throws {
        let downloaded = folder.path + "/downloaded"
        let get = try server.curl(["-o", downloaded, "\(server.endpoint)/\(bucket)/\(key)"])
        #expect(get.status == 200)
        #expect(try sha256sum(downloaded) == (try sha256sum(input)))
    }

    /// S3 makes the upload and its answer is lost: the create is retried (a second upload), and the first one is
    /// aborted once the second is known — with the journal and without one. The other client's upload stays open.
    @Test(arguments: [true, false]) func aLostCreateAnswerLeavesNoUploadOpen(journaled: Bool) throws {
        let key = "lost-create-\(journaled)-\(UUID().uuidString.prefix(8))/big.bin"
        let foreign = try foreignUpload(key)
        let proxy = try FixtureBackend(
            faults: #"[{"method": "POST", "path": "/\#(bucket)/\#(key)", "action": "act_then_reset", "times": 1}]"#,
            upstream: server.endpoint)
        defer { proxy.stop() }
        let folder = try TemporaryFolder("s3-lost-create")
        defer { folder.remove() }
        let input = try writeRandomFile(folder.path + "/big.bin", size: 11 << 20, seed: 29)  // three parts
        let store = try SQLiteJournal(path: folder.path + "/journal.sqlite")
        defer { try? store.close() }
        let journal = journaled ? UploadJournal(store: store, fileID: 3, position: 1, configHash: "h") : nil
        let result = try uploader(proxy.base, journal: journal).upload(
            path: input, key: key, headers: [], contentType: "application/octet-stream")
        #expect(result.parts == 3)
        try expectStored(key, equal: input, in: folder)
        let sent = try proxy.requests().filter { ($0[1] as? String) == "/\(bucket)/\(key)" }
            .map { "\($0[0]) \($0[2])" }
        #expect(sent.first == "POST reset after 200" && sent.dropFirst().first == "POST 200", "\(sent)")
        #expect(sent.filter { $0.hasPrefix("DELETE") }.count == 1, "the lost upload was not aborted: \(sent)")
        #expect(try openUploads(key) == [foreign])
        #expect(try store.multipartUpload(fileID: 3, position: 1) == nil)
    }

    /// A run killed after S3 made the upload but before the journal learnt its id left only the intent: the next
    /// upload of the file aborts the upload S3 made in that create's window, and leaves the other client's alone.
    @Test func anInterruptedCreateIsCleanedUpByTheNextRun() throws {
        let key = "killed-create-\(UUID().uuidString.prefix(8))/big.bin"
        let foreign = try foreignUpload(key)
        let folder = try TemporaryFolder("s3-killed-create")
        defer { folder.remove() }
        let input = try writeRandomFile(folder.path + "/big.bin", size: 11 << 20, seed: 31)
        let store = try SQLiteJournal(path: folder.path + "/journal.sqlite")
        defer { try? store.close() }
        let status = try FileStatus(path: input, followLinks: true)
        let url = "\(server.endpoint)/\(bucket)/\(key)"
        // What the killed run did: the intent journaled, then the create S3 answered into the void.
        try store.beginMultipartUpload(
            JournaledMultipartUpload(
                fileID: 4, position: 0, url: url, bucket: bucket, key: key, uploadID: "", partSize: 5 << 20,
                fileSize: status.size, modified: status.modified, inode: status.inode, configHash: "h"))
        let orphan = try #require(
            XMLText.element("UploadId", in: try server.curl(["-X", "POST", url + "?uploads="]).body))
        #expect(Set(try openUploads(key)) == [foreign, orphan])

        let journal = UploadJournal(store: store, fileID: 4, position: 0, configHash: "h")
        let result = try uploader(server.endpoint, journal: journal).upload(
            path: input, key: key, headers: [], contentType: "application/octet-stream")
        #expect(result.parts == 3)
        try expectStored(key, equal: input, in: folder)
        #expect(try openUploads(key) == [foreign])
        #expect(try store.multipartUpload(fileID: 4, position: 0) == nil)
    }
}

/// The same with a real kill: `ingest run` is killed with SIGKILL while S3's answer to the create is held at the
/// proxy (S3 made the upload; the run never learnt its id). `ingest status` says so, and the next run aborts that
/// upload, uploads the file in a new one, and leaves none open.
extension S3MultipartResumeTests {
    @Test func killedWhileTheCreatesAnswerWasHeldTheNextRunAbortsItsUpload() throws {
        let setup = try setUp("killed-create")
        defer {
            setup.proxy.stop()
            setup.folder.remove()
        }
        let path = "/\(bucket)/\(setup.key)"
        try setup.proxy.setFaults(
            #"[{"method": "POST", "path": "\#(path)", "action": "act_then_hang", "seconds": 60}]"#)
        try killIngest(
            ["run", setup.pipeline, "in", "-q"], in: setup.folder.path, environment: environment,
            at: "the upload created, its answer held"
        ) {
            let requests = (try? setup.proxy.requests()) ?? []
            return requests.contains { $0[0] as? String == "POST" && $0[1] as? String == path }
        }
        try setup.proxy.setFaults("[]")
        let orphan = try openUploads(setup.key)
        try #require(orphan.count == 1, "\(orphan)")
        let status = try runCommand(
            TestPaths.ingest, ["status", "--journal", setup.journal], environment: environment,
            directory: setup.folder.path)
        #expect(status.stdout.contains("was being created when its run stopped"), "\(status.stdout)")

        let (second, reports) = try run(setup)
        #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
        #expect(reports.first?["status"] as? String == "passed", "\(reports)")
        try expectStoredCopy(setup, of: setup.input)
        #expect(try openUploads(setup.key).isEmpty)
        #expect(journaledParts(setup) == 0)
    }
}
