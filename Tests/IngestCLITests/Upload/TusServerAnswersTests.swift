import Foundation
import NativePostgres
import Testing

@testable import IngestCore
@testable import IngestJournal
@testable import IngestTestSupport
@testable import IngestJournalTestSupport

/// How `method: tus` answers what a real tus 1.0 server (fastapi-tusd, Tests/Fixtures/tus_server.py) says when
/// things go wrong on the way: the server's own 409 after a PATCH cut by a gateway (the client asks `HEAD` and goes
/// on from the server's offset), its 460 Checksum Mismatch after a corrupted PATCH (sent again; every time: the file
/// fails and its upload is terminated), an upload that expires in the middle of a run (404 or 410: a new upload),
/// and `Upload-Checksum` only when `OPTIONS` announced the checksum extension. The faults are arranged by the
/// fixture (Tests/Fixtures/tus_faults.py); the answers are the server's.
@Suite(.serialized) struct TusServerAnswersTests {
    func pipeline(_ folder: TemporaryFolder, _ server: TusServer, chunk: String) throws -> String {
        try folder.file(
            "tus.yml",
            """
            version: 1
            name: tus-answers
            stages:
              - upload:
                  method: tus
                  url: \(server.creationURL)
                  chunk_size: \(chunk)
                  backoff: 20ms
                  as: stored

            """)
    }

    func run(_ pipeline: String, in folder: TemporaryFolder) throws -> (CommandResult, [[String: Any]]) {
        try runIngestWithReport(pipeline, ["in"], in: folder.path, environment: environmentWithoutProxies())
    }

    /// The one upload the server holds equals `input`.
    func expectStored(_ server: TusServer, equals input: String) throws {
        let uploads = try server.uploads()
        #expect(uploads.count == 1, "\(uploads.keys)")
        let stored = try #require(uploads.first?.value)
        #expect(stored.offset == Int64(try FileManager.default.attributesOfItem(atPath: input)[.size] as! Int))
        #expect(FileManager.default.contents(atPath: stored.path) == FileManager.default.contents(atPath: input))
    }

    /// `headers` go with every tus request (OPTIONS, POST, PATCH, HEAD, DELETE); the creation's `Upload-Metadata`
    /// has `filename` and `filetype` by default, then the pipeline's `metadata`.
    @Test func everyRequestCarriesTheHeadersAndTheCreationTheMetadata() throws {
        let server = try TusServer()
        defer { server.stop() }
        let folder = try TemporaryFolder("tus-headers")
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/clip.bin", size: 300_000, seed: 66)
        let pipeline = try folder.file(
            "tus.yml",
            """
            version: 1
            name: tus-headers
            stages:
              - upload:
                  method: tus
                  url: \(server.creationURL)
                  headers: { Authorization: "Bearer ${TUS_TOKEN}" }
                  metadata: { camera: "rink 2" }
                  content_type: video/mp4
                  chunk_size: 128KiB

            """)
        let environment = environmentWithoutProxies(["TUS_TOKEN": "t0ken"])
        // Two pieces pass, then the server refuses a piece (the file fails for good: DELETE).
        try server.setFaults(#"[{"action": "expire", "after": 2, "status": 403}]"#)
        let (result, _) = try runIngestWithReport(pipeline, ["in"], in: folder.path, environment: environment)
        #expect(result.status == 1, "\(result.stderr)")
        let stats = try server.stats()
        #expect(stats.requests == ["OPTIONS": 1, "POST": 1, "PATCH": 3, "DELETE": 1], "\(stats.requests)")
        #expect(stats.authorized == stats.requests, "\(stats.authorized)")
        // The 403 expired upload is gone; a second run keeps the upload for the metadata to be read.
        try server.setFaults("[]")
        _ = try runIngestWithReport(pipeline, ["in"], in: folder.path, environment: environment)
        let id = try #require(try server.uploads().first?.key)
        let metadata = try server.metadata(id)
        #expect(metadata == ["filename": "clip.bin", "filetype": "video/mp4", "camera": "rink 2"], "\(metadata)")
    }

    /// A gateway cuts the first PATCH half way (the server keeps the half it got) and answers 502; the client's
    /// retry at the offset it knew is stale, and the server answers 409. The client asks `HEAD` and sends from the
    /// server's offset. The server does not announce the checksum extension: no PATCH carries `Upload-Checksum`.
    @Test func aStaleOffsetIsAnswered409AndTheClientAsksHEAD() throws {
        let server = try TusServer()
        defer { server.stop() }
        let folder = try TemporaryFolder("tus-409")
        defer { folder.remove() }
        let input = try writeRandomFile(folder.path + "/in/big.bin", size: 1 << 20, seed: 61)
        let pipeline = try pipeline(folder, server, chunk: "256KiB")
        try server.setFaults(#"[{"action": "cut"}]"#)
        let (result, reports) = try run(pipeline, in: folder)
        #expect(result.status == 0, "\(result.stderr)\(reports)")
        let stats = try server.stats()
        #expect(stats.answers["PATCH 502"] == 1 && stats.answers["PATCH 409"] == 1, "\(stats.answers)")
        #expect(stats.requests["POST"] == 1 && (stats.requests["HEAD"] ?? 0) >= 1, "\(stats.requests)")
        #expect(stats.checksumHeaders == 0)
        try expectStored(server, equals: input)
        // After the 409 the client went on from the middle of the cut piece, not from its start.
        #expect(stats.patchBytes == 1 << 20, "the server got \(stats.patchBytes) bytes")
    }

    /// One PATCH corrupted on the way: the server announced the checksum extension, checks `Upload-Checksum` and
    /// answers 460; the client asks `HEAD` and sends the piece again.
    @Test func aChecksumMismatchIsAnswered460AndThePieceSentAgain() throws {
        let server = try TusServer(checksum: true)
        defer { server.stop() }
        let folder = try TemporaryFolder("tus-460")
        defer { folder.remove() }
        let input = try writeRandomFile(folder.path + "/in/a.bin", size: 300_000, seed: 62)
        let pipeline = try pipeline(folder, server, chunk: "64KiB")
        try server.setFaults(#"[{"action": "corrupt"}]"#)
        let (result, reports) = try run(pipeline, in: folder)
        #expect(result.status == 0, "\(result.stderr)\(reports)")
        let stats = try server.stats()
        #expect(stats.answers["PATCH 460"] == 1, "\(stats.answers)")
        #expect(stats.answers["PATCH 204"] == 5, "\(stats.answers)")
        #expect(stats.checksumHeaders == 6 && stats.checksums == 6)
        try expectStored(server, equals: input)
    }

    /// Every PATCH corrupted: after the 460s the client allows (one, then five more after `HEAD`), the file fails
    /// with the server's answer named, and its upload is terminated (`DELETE`); the batch's other file passes.
    @Test func aChecksumMismatchEveryTimeFailsTheFileAndTerminatesItsUpload() throws {
        let server = try TusServer(checksum: true)
        defer { server.stop() }
        let folder = try TemporaryFolder("tus-460-always")
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/a.bin", size: 100_000, seed: 63)
        let pipeline = try pipeline(folder, server, chunk: "64KiB")
        try server.setFaults(#"[{"action": "corrupt", "times": 1000}]"#)
        let (result, reports) = try run(pipeline, in: folder)
        #expect(result.status == 1, "\(result.stderr)")
        let failure = try #require((reports.first?["failures"] as? [[String: Any]])?.first, "\(reports)")
        #expect(failure["rule"] as? String == "status", "\(failure)")
        #expect((failure["message"] as? String)?.contains("460") == true, "\(failure)")
        let stats = try server.stats()
        #expect(stats.answers["PATCH 460"] == 6, "\(stats.answers)")
        #expect(stats.deleted.count == 1, "DELETE sent for: \(stats.deleted)")
        #expect(try server.uploads().isEmpty)
    }

    /// A server that does not offer termination (its `OPTIONS` lists no `termination`) gets no `DELETE` for a file
    /// that fails for good; the same failure on a server that offers it does (`TusUploadTests`).
    @Test func noDeleteWhereTheServerDoesNotOfferTermination() throws {
        let server = try TusServer(maxPatchBytes: 100_000)
        defer { server.stop() }
        let folder = try TemporaryFolder("tus-no-termination")
        defer { folder.remove() }
        try writeRandomFile(folder.path + "/in/a.bin", size: 300_000, seed: 67)
        let pipeline = try pipeline(folder, server, chunk: "128KiB")
        try server.setFaults(#"[{"action": "without", "extension": "termination"}]"#)
        let (result, reports) = try run(pipeline, in: folder)
        #expect(result.status == 1, "\(result.stderr)")
        #expect("\(reports)".contains("413"), "\(reports)")
        let stats = try server.stats()
        #expect(stats.answers["PATCH 413"] == 1 && stats.requests["DELETE"] == nil, "\(stats.requests)")
    }

    /// The upload expires after its first piece (the server answers 404 or 410 from then on): the client creates
    /// a new upload in the same run and sends the whole file to it.
    @Test(arguments: [404, 410]) func anUploadThatExpiresMidRunStartsOver(status: Int) throws {
        let server = try TusServer()
        defer { server.stop() }
        let folder = try TemporaryFolder("tus-expired")
        defer { folder.remove() }
        let input = try writeRandomFile(folder.path + "/in/a.bin", size: 300_000, seed: 64)
        let pipeline = try pipeline(folder, server, chunk: "64KiB")
        try server.setFaults(#"[{"action": "expire", "after": 1, "status": \#(status)}]"#)
        let (result, reports) = try run(pipeline, in: folder)
        #expect(result.status == 0, "\(result.stderr)\(reports)")
        let stats = try server.stats()
        #expect(stats.answers["PATCH \(status)"] == 1, "\(stats.answers)")
        #expect(stats.requests["POST"] == 2, "\(stats.requests)")
        try expectStored(server, equals: input)
        let facts = reports.first?["facts"] as? [String: Any]
        let stored = try #require(facts?["stored"] as? [String: Any], "\(reports)")
        #expect(stored["resumed_from"] as? Int == 0 && stored["sent"] as? Int == 300_000 + 65_536, "\(stored)")
    }
}

/// The tus upload URL in the shared PostgreSQL journal (`--journal postgres://…`): a worker killed at about 60 %
/// has journaled it (`ingest_meta`, key `tus-upload <endpoint> <path>`) before its first byte, and the worker that
/// takes the file over once the lease expired resumes the same upload from the server's offset.
@Suite(.serialized) struct TusPostgresJournalTests {
    @Test(.postgres) func aWorkerKilledAt60PercentIsResumedFromTheSharedJournal() throws {
        let url = try PostgresServer.shared().createDatabase()
        let server = try TusServer()
        defer { server.stop() }
        let folder = try TemporaryFolder("tus-pg")
        defer { folder.remove() }
        let size: Int64 = 4 << 20
        let input = try writeRandomFile(folder.path + "/in/big.bin", size: Int(size), seed: 65)
        let pipeline = try folder.file(
            "tus.yml",
            """
            version: 1
            name: tus-pg
            stages:
              - upload: { method: tus, url: \(server.creationURL), as: stored }

            """)
        let journal = ["--journal", url, "--lease-seconds", "1"]
        try killIngest(
            ["run", pipeline, "in", "-q", "--bwlimit", "2M"] + journal, in: folder.path, at: "60 % at the server"
        ) { ((try? server.stats().patchBytes) ?? 0) >= size * 6 / 10 }
        let atKill = try server.stats().patchBytes
        #expect(atKill < size, "the first run finished before it was killed")
        // The key names the file by its absolute path (the journal's own root and relative path), not by the
        // input as typed: the worker that takes over may be started elsewhere and name the folder otherwise.
        let key = "tus-upload \(server.creationURL) \(folder.path)/in/big.bin"
        let database = try PostgresJournal(url: url, writer: false)
        let keys = try PostgresConnection(conninfo: url).execute("SELECT key FROM ingest_meta").compactMap { $0[0] }
        let entry = try #require(try database.meta(key), "no \(key) in ingest_meta: \(keys)")
        let upload = try #require(try server.uploads().first?.key)
        #expect(entry.contains("\\/files\\/\(upload)") || entry.contains("/files/\(upload)"), "\(entry)")

        let elsewhere = folder.path + "/elsewhere"
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        let result = try runCommand(
            TestPaths.ingest, ["run", pipeline, folder.path + "/in", "-q"] + journal,
            environment: environmentWithoutProxies(), directory: elsewhere)
        #expect(result.status == 0, "\(result.stderr)")
        let stats = try server.stats()
        #expect(stats.requests["POST"] == 1 && (stats.requests["HEAD"] ?? 0) >= 1, "\(stats.requests)")
        #expect(stats.patchBytes - atKill <= size / 2, "the rerun sent \(stats.patchBytes - atKill) of \(size) bytes")
        let uploads = try server.uploads()
        #expect(uploads.count == 1 && uploads[upload]?.offset == size)
        #expect(
            FileManager.default.contents(atPath: uploads[upload]?.path ?? "")
                == FileManager.default.contents(atPath: input))
        let left = try database.meta(key)
        #expect(left == nil || left == "", "the journal still holds the finished upload: \(left ?? "")")
    }
}
