import Foundation
import NativeSystem
import Testing

@testable import Ingest
@testable import IngestConfig
@testable import IngestCore
@testable import IngestJournal
@testable import IngestRun

/// Issue 13: an `s3` upload reads each byte of the file once to hash it (every digest it needs — the signature's
/// SHA-256, Content-MD5 or the ETag's MD5, the journal's SHA-256 — fed by the same read) and once to send it;
/// before, a signed multipart upload read the file a third time for the journal's hash, and a single PUT a second
/// or third time for its ETag's MD5. Runs in-process (the read counter is the library's) against SeaweedFS, with the
/// journal on; the journal's identity (XXH3-128 since issue 22) is checked against `xxhsum`.
@Suite(.serialized) struct UploadReadPassTests {
    let server: SeaweedFS
    let bucket = "ingest-read-pass"

    init() throws {
        server = try SeaweedFS.shared()
        try server.createBucket(bucket)
    }

    /// Runs an `s3` upload of `file` (in `folder/media`) with the journal on; returns the journal's record of it.
    func upload(_ folder: TemporaryFolder, file: String, options: String) throws -> (ItemReport?, JournalRecord?) {
        let yaml = """
            version: 1
            name: read-pass
            stages:
              - upload:
                  method: s3
                  endpoint: \(server.endpoint)
                  bucket: \(bucket)
                  access_key_id: \(server.accessKey)
                  secret_access_key: \(server.secretKey)
                  key: "\(UUID().uuidString.prefix(8))/{{file.name}}"
            \(options)

            """
        let pipeline = try Pipeline.parse(yaml: yaml, source: "read-pass.yml", environment: [:])
        let journal = try SQLiteJournal(path: folder.path + "/.ingest/journal.sqlite")
        let runner = Runner(
            pipeline: pipeline, settings: RunSettings(workDirectory: folder.path + "/.ingest/work", environment: [:]),
            journal: journal)
        var report: ItemReport?
        try runner.run(paths: [folder.path + "/media"]) { report = $0 }
        var record: JournalRecord?
        try journal.forEachRecord { if $0.relativePath == (file as NSString).lastPathComponent { record = $0 } }
        try journal.close()
        return (report, record)
    }

    func expectOnePass(_ options: String, size: Int, hashReads: Int64, _ comment: Comment) throws {
        let folder = try TemporaryFolder("read-pass")
        defer { folder.remove() }
        let file = try writeRandomFile(folder.path + "/media/big.bin", size: size, seed: 13)
        FileReadCounter.track(file)
        let (report, record) = try upload(folder, file: file, options: options)
        #expect(report?.status == .passed, "\(report?.failures ?? [])")
        #expect(FileReadCounter.bytes(file, .hash) == hashReads, "bytes read to hash: \(comment)")
        #expect(FileReadCounter.bytes(file, .send) == Int64(size), "bytes read to send: \(comment)")
        // The journal's identity is XXH3-128 (issue 22 §4), fed by the same read.
        let xxhsum = try runCommand("/usr/bin/env", ["xxhsum", "-H2", file]).stdout.split(separator: " ").first ?? ""
        #expect(record?.sha256 == "xxh3-128:\(xxhsum)", "the journal's identity: \(String(describing: record))")
    }

    /// 12 MiB in 5 MiB parts, signed, Content-MD5: one read feeds each part's SHA-256 and MD5 and the file's SHA-256.
    @Test func signedMultipartReadsEachByteOnceToHashAndOnceToSend() throws {
        try expectOnePass(
            "      part_size: 5MiB\n      payload_signing: signed", size: 12 << 20, hashReads: 12 << 20,
            "signed multipart")
    }

    @Test func signedMultipartWithSHA256ChecksumsReadsOnceToHash() throws {
        try expectOnePass(
            "      part_size: 5MiB\n      checksum: sha256", size: 11 << 20, hashReads: 11 << 20, "sha256 checksums")
    }

    /// A signed single PUT hashes once (SHA-256 and the ETag's MD5 together), then sends.
    @Test func signedSinglePutReadsEachByteOnceToHash() throws {
        try expectOnePass("      payload_signing: signed", size: 3 << 20, hashReads: 3 << 20, "signed PUT")
    }

    /// An unsigned single PUT needs no hash before sending: the ETag's MD5 and the journal's SHA-256 ride along.
    @Test func unsignedSinglePutReadsTheFileOnce() throws {
        try expectOnePass("      payload_signing: unsigned", size: 3 << 20, hashReads: 0, "unsigned PUT")
    }
}
