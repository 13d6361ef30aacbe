import Foundation
import Testing

@testable import Ingest

/// Replays the fuzz corpus (`Tests/Fuzz/<target>/`: seeds and every crash `make fuzz` found) through the fuzz
/// entries in the plain build, so a fixed crash stays fixed. An entry traps on a crash or a broken invariant.
@Suite struct FuzzCorpusTests {
    @Test(arguments: FuzzTarget.allCases)
    func replaysCorpus(_ target: FuzzTarget) throws {
        let directory = TestPaths.root + "/Tests/Fuzz/" + target.rawValue
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        #expect(!names.isEmpty, "no corpus in \(directory)")
        for name in names {
            let data = try #require(FileManager.default.contents(atPath: directory + "/" + name), "\(name)")
            target.run([UInt8](data))
        }
    }
}

/// What the fuzzers found, as plain tests (the corpus file of each is in Tests/Fuzz/ too).
@Suite struct FuzzFindingsTests {
    /// multipart crash-content-type-crlf: a file type with CR LF (a ticket's `Content-Type` field) ended the file
    /// part's headers early, so the file's bytes gained a line and a header could be injected.
    @Test func fileTypeCannotEndTheHeaders() throws {
        let form = MultipartForm(fields: [], fileName: "a.jpg", fileType: "image/jpeg\r\nX-Injected: 1\r\n\r\n")
        let head = String(decoding: form.head, as: UTF8.self)
        #expect(!head.contains("\r\nX-Injected"), "\(head)")
        #expect(head.hasSuffix("Content-Type: image/jpegX-Injected: 1\r\n\r\n"), "\(head)")
    }
}
