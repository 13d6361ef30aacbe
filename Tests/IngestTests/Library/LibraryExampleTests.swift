import Foundation
import Ingest
import Testing

@testable import IngestCore

/// docs/library.md shows the code of LibraryExample.swift (compiled with the tests), and that code works.
@Suite struct LibraryExampleTests {
    static func example() throws -> String {
        let source = try String(
            contentsOfFile: TestPaths.root + "/Tests/IngestTests/Library/LibraryExample.swift", encoding: .utf8)
        let start = try #require(source.range(of: "// BEGIN EXAMPLE\n"))
        let end = try #require(source.range(of: "// END EXAMPLE"))
        return String(source[start.upperBound..<end.lowerBound])
    }

    @Test func documentShowsTheCompiledExample() throws {
        let document = try String(contentsOfFile: TestPaths.root + "/docs/library.md", encoding: .utf8)
        let start = try #require(document.range(of: "```swift\n"))
        let end = try #require(document.range(of: "```", range: start.upperBound..<document.endIndex))
        #expect(String(document[start.upperBound..<end.lowerBound]) == (try Self.example()))
    }

    @Test func exampleRunsAPipelineAndPresigns() throws {
        let folder = try TemporaryFolder("library")
        defer { folder.remove() }
        let pipelineFile = try folder.file(
            "p.yml", "version: 1\nname: sizes\nstages:\n  - validate:\n      max_bytes: 10\n")
        let small = try folder.file("in/small.txt", "tiny")
        _ = try folder.file("in/large.txt", "more than ten bytes")
        let summary = try ingest(pipelineFile: pipelineFile, paths: [folder.path + "/in"])
        #expect(summary.passed == 1 && summary.failed == 1)
        #expect(throws: ProbeError.self) { try describe(file: small) }
        let url = try downloadURL(
            for: "s3://bucket/key.mov", credentials: AWSCredentials(accessKeyID: "AKID", secretAccessKey: "secret"))
        #expect(url.hasPrefix("https://bucket.s3.us-east-1.amazonaws.com/key.mov?X-Amz-Algorithm=AWS4-HMAC-SHA256"))
    }
}
