import Foundation
import Testing

@testable import IngestFuzzing
@testable import IngestNetwork
@testable import IngestStages
@testable import IngestTestSupport

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

extension FuzzFindingsTests {
    /// policy crash-expiration-year-20300: a five-digit year parsed, and the policy's own JSON then carried
    /// `2030-00-10TT0:00:00Z`, which does not parse back (formatDate writes four year digits).
    @Test func expirationYearMustHaveFourDigits() throws {
        let document = #"{"expiration":"20300-01-01T00:00:00.123Z","conditions":[["content-length-range",0,0]]}"#
        #expect(throws: S3Error.self) { try S3PostPolicy(json: Data(document.utf8)) }
        let fine = try S3PostPolicy(json: Data(#"{"expiration":"9999-12-31T23:59:59Z","conditions":[]}"#.utf8))
        #expect(fine.json.contains("\"9999-12-31T23:59:59Z\""))
    }
}
