import Foundation
import Testing

@testable import IngestCore
@testable import IngestTestSupport

/// docs/ci.md's GitHub and GitLab snippets install every apt package that Package.swift's system libraries name as
/// providers: a library linked later without its `-dev` package in the snippets fails here, not in a user's CI.
@Suite struct CISnippetTests {
    /// The packages of every `.apt([...])` in Package.swift.
    static func providers() throws -> Set<String> {
        let manifest = try String(contentsOfFile: TestPaths.root + "/Package.swift", encoding: .utf8)
        let lists = try NSRegularExpression(pattern: #"\.apt\(\[([^\]]*)\]\)"#)
        var names = Set<String>()
        for match in lists.matches(in: manifest, range: NSRange(manifest.startIndex..., in: manifest)) {
            guard let range = Range(match.range(at: 1), in: manifest) else { continue }
            for name in manifest[range].split(separator: ",") {
                names.insert(name.trimmingCharacters(in: CharacterSet(charactersIn: "\" \n")))
            }
        }
        return names
    }

    @Test func bothSnippetsInstallWhatPackageSwiftLinks() throws {
        let providers = try Self.providers()
        #expect(providers.contains("libxxhash-dev") && providers.contains("libavformat-dev"), "\(providers)")
        let text = try String(contentsOfFile: TestPaths.root + "/docs/ci.md", encoding: .utf8)
        let snippets = text.components(separatedBy: "```yaml\n").dropFirst()
            .compactMap { $0.components(separatedBy: "```").first }
        #expect(snippets.count == 2)
        for snippet in snippets {
            let words = Set(snippet.split(whereSeparator: { " \n\\".contains($0) }).map(String.init))
            let missing = providers.subtracting(words).sorted()
            #expect(
                missing.isEmpty,
                "docs/ci.md's snippet \(snippet.prefix(30))… does not install \(missing) (Package.swift links them)")
        }
    }
}
