import Foundation
import Ingest
import Testing

@testable import IngestCore
@testable import IngestTestSupport

/// docs/library.md shows the code of LibraryExample.swift (compiled with the tests), and that code works.
@Suite struct LibraryExampleTests {
    static func example() throws -> String {
        let source = try String(
            contentsOfFile: TestPaths.root + "/Tests/IngestTests/LibraryExample.swift", encoding: .utf8)
        let start = try #require(source.range(of: "// BEGIN EXAMPLE\n"))
        let end = try #require(source.range(of: "// END EXAMPLE"))
        return String(source[start.upperBound..<end.lowerBound])
    }

    /// docs/library.md and the DocC catalog's article show the same code, the code compiled here.
    @Test(arguments: ["docs/library.md", "Sources/Ingest/Ingest.docc/EmbeddingIngest.md"])
    func documentShowsTheCompiledExample(_ path: String) throws {
        let document = try String(contentsOfFile: TestPaths.root + "/" + path, encoding: .utf8)
        let start = try #require(document.range(of: "```swift\nimport Foundation\nimport Ingest\n"))
        let end = try #require(document.range(of: "```", range: start.upperBound..<document.endIndex))
        #expect(
            "import Foundation\nimport Ingest\n" + String(document[start.upperBound..<end.lowerBound])
                == (try Self.example()))
    }

    /// The page starts with the `Package.swift` an embedder writes: read by SwiftPM (`swift package
    /// dump-package`), it asks for this package's tools version and platform and depends on its library product by
    /// the package's name.
    @Test func documentStartsWithThePackageLinesAnEmbedderAdds() throws {
        let document = try String(contentsOfFile: TestPaths.root + "/docs/library.md", encoding: .utf8)
        let section = try #require(markedSection("embedder-package", in: document))
        #expect(
            document.range(of: "<!-- BEGIN embedder-package -->")!.lowerBound
                < document.range(of: "import Ingest")!.lowerBound)
        let manifest = try #require(
            section.components(separatedBy: "```swift\n").last?.components(separatedBy: "```").first)
        let ours = try String(contentsOfFile: TestPaths.root + "/Package.swift", encoding: .utf8)
        let toolsVersion = try #require(ours.split(separator: "\n").first)
        #expect(
            manifest.hasPrefix(toolsVersion + "\n"), "docs/library.md: the manifest must start with \(toolsVersion)")
        for declared in [#"name: "ingest","#, #".library(name: "Ingest""#, ".macOS(.v15)"] {
            #expect(ours.contains(declared), "Package.swift no longer declares \(declared): update docs/library.md")
        }
        let folder = try TemporaryFolder("embedder")
        defer { folder.remove() }
        _ = try folder.file("my-tool/Package.swift", manifest)
        _ = try folder.file("my-tool/Sources/my-tool/main.swift", "import Ingest\n")
        let dumped = try runCommand(
            "/usr/bin/env", ["swift", "package", "dump-package", "--package-path", folder.path + "/my-tool"])
        #expect(dumped.status == 0, "\(dumped.stderr)")
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(dumped.stdout.utf8)) as? [String: Any], "\(dumped.stdout)")
        let platforms = (json["platforms"] as? [[String: Any]])?.map {
            "\($0["platformName"] ?? "") \($0["version"] ?? "")"
        }
        #expect(platforms == ["macos 15.0"], "\(json["platforms"] ?? "")")
        let target = try #require((json["targets"] as? [[String: Any]])?.first)
        let product = "\(target["dependencies"] ?? "")"
        #expect(product.contains("Ingest") && product.contains("ingest"), "\(product)")
        let dependency = "\(json["dependencies"] ?? "")"
        #expect(dependency.contains("../ingest") || dependency.contains("/ingest"), "\(dependency)")
    }

    @Test func asyncExampleStopsAtTheFirstFailure() async throws {
        let folder = try TemporaryFolder("library-async")
        defer { folder.remove() }
        let pipelineFile = try folder.file(
            "p.yml", "version: 1\nname: sizes\nconcurrency: 1\nstages:\n  - validate:\n      max_bytes: 10\n")
        _ = try folder.file("in/a.txt", "tiny")
        _ = try folder.file("in/b.txt", "more than ten bytes")
        _ = try folder.file("in/c.txt", "more than ten bytes too")
        let failed = try await firstFailure(pipelineFile: pipelineFile, paths: [folder.path + "/in"])
        #expect(failed?.relativePath == "b.txt")
        #expect(failed?.failures.first?.rule.rawValue == "max_bytes")
        #expect(try await firstFailure(pipelineFile: pipelineFile, paths: [folder.path + "/in/a.txt"]) == nil)
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
