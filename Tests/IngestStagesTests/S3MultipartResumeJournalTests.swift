import Foundation
import Testing

@testable import IngestCore
@testable import IngestJournal
@testable import IngestNetwork
@testable import IngestTestSupport
@testable import IngestJournalTestSupport

/// A multipart upload cut short by a lost link (a part answered with a network failure) is kept open and journaled,
/// in the SQLite journal and in PostgreSQL; a second uploader reads it back, pages through ListParts two parts at a
/// time, and sends only the parts S3 lacks. Requests are counted by the proxy in front of SeaweedFS.
@Suite(.serialized) struct S3MultipartResumeJournalTests {
    let server: SeaweedFS
    let bucket = "ingest-s3-resume"

    init() throws {
        server = try SeaweedFS.shared()
        try server.createBucket(bucket)
    }

    func uploader(_ endpoint: String, journal: UploadJournal) throws -> S3Uploader {
        var options = S3UploadOptions()
        options.bucket = bucket
        options.endpoint = endpoint
        options.accessKeyID = server.accessKey
        options.secretAccessKey = server.secretKey
        options.region = server.region
        options.partSize = ByteSize(bytes: 5 << 20)
        options.partConcurrency = 1
        return try S3Uploader(
            stage: "upload", options: options, network: NetworkOptions(), limiter: nil, environment: [:]
        ).resuming(journal)
    }

    func store(_ backend: String, in folder: TemporaryFolder) throws -> any JournalStore {
        if backend == "sqlite" { return try SQLiteJournal(path: folder.path + "/journal.sqlite") }
        return try PostgresJournal(url: try PostgresServer.shared().createDatabase())
    }

    @Test func lostLinkKeepsTheUploadAndListPartsIsPaged() throws { try lostLink(backend: "sqlite") }

    /// Skipped (and shown so) where PostgreSQL is not installed, rather than passing having checked nothing.
    @Test(.postgres) func lostLinkKeepsTheUploadInPostgreSQL() throws { try lostLink(backend: "postgres") }

    func lostLink(backend: String) throws {
        let proxy = try FixtureBackend(upstream: server.endpoint)
        defer { proxy.stop() }
        let folder = try TemporaryFolder("s3-resume-journal")
        defer { folder.remove() }
        let input = try writeRandomFile(folder.path + "/big.bin", size: 26 << 20, seed: 21)  // six parts
        let journalStore = try store(backend, in: folder)
        defer { try? journalStore.close() }
        let parts = try #require(journalStore as? any MultipartJournal)
        let journal = UploadJournal(store: parts, fileID: 7, position: 2, configHash: "pipeline-hash")
        let key = "paged-\(backend)-\(UUID().uuidString.prefix(8))/big.bin"

        var first = try uploader(proxy.base, journal: journal)
        first.afterPart = { number in
            if number == 4 { throw ItemFailed(stage: "upload", rule: .network, message: "the link went down") }
        }
        let error = #expect(throws: ItemFailed.self) {
            try first.upload(path: input, key: key, headers: [], contentType: "application/octet-stream")
        }
        #expect(
            error?.failures.first?.message.contains("the next run resumes it") == true, "\(String(describing: error))")
        let kept = try #require(try parts.multipartUpload(fileID: 7, position: 2))
        #expect(kept.parts.map(\.number) == [1, 2, 3, 4])
        #expect(kept.storedBytes == 20 << 20)
        #expect(kept.key == key && kept.bucket == bucket)

        let start = try proxy.requests().count
        var second = try uploader(proxy.base, journal: journal)
        second.listPartsPageSize = 2
        let result = try second.upload(
            path: input, key: key, headers: [], contentType: "application/octet-stream")
        #expect(result.parts == 6)
        let sent = try proxy.requests().dropFirst(start).filter { ($0[1] as? String) == "/\(bucket)/\(key)" }
            .compactMap { $0[0] as? String }
        // Two pages of ListParts (parts 1–2, 3–4), then parts 5 and 6, then CompleteMultipartUpload.
        #expect(sent == ["GET", "GET", "PUT", "PUT", "POST"], "\(sent)")
        let downloaded = folder.path + "/downloaded"
        let get = try server.curl(["-o", downloaded, "\(server.endpoint)/\(bucket)/\(key)"])
        #expect(get.status == 200)
        #expect(try sha256sum(downloaded) == (try sha256sum(input)))
        #expect(try parts.multipartUpload(fileID: 7, position: 2) == nil)
        let listing = try server.curl(["\(server.endpoint)/\(bucket)?uploads="])
        #expect(!listing.body.contains(key), "\(listing.body)")
    }
}
