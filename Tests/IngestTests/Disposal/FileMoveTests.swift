import Foundation
import NativeSystem
import Testing

@testable import Ingest

/// Issue 23 §2, moves across file systems: copy to a temporary name in the target, fsync, put in place without
/// replacing, then unlink the source; a taken name is never replaced, on either path.
@Suite struct FileMoveTests {
    static func leftovers(_ folder: String) -> [String] {
        (FileManager.default.enumerator(atPath: folder)?.allObjects as? [String] ?? []).filter {
            $0.contains(".ingest-tmp-")
        }
    }

    @Test(arguments: [false, true]) func aMoveNeverReplacesATakenName(forceCopy: Bool) throws {
        let folder = try TemporaryFolder("move-taken")
        defer { folder.remove() }
        let source = try folder.file("in/a.txt", "new")
        let target = try folder.file("out/a.txt", "old")
        var refused = false
        do {
            try FileMove.move(from: source, to: target, forceCopy: forceCopy)
        } catch {
            guard case .exists = error else { throw error }
            refused = true
        }
        #expect(refused)
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "old")
        #expect(try String(contentsOfFile: source, encoding: .utf8) == "new")
        #expect(Self.leftovers(folder.path).isEmpty)
    }

    @Test func theCopyPathCopiesThenUnlinks() throws {
        let folder = try TemporaryFolder("move-copy")
        defer { folder.remove() }
        let source = try folder.file("in/a.txt", String(repeating: "x", count: 600_000))
        let expected = try FileStatus(path: source, followLinks: true)
        let method = try FileMove.move(
            from: source, to: folder.path + "/out/deep/a.txt", expected: expected, forceCopy: true)
        #expect(method == .copied)
        #expect(!FileManager.default.fileExists(atPath: source))
        #expect(try String(contentsOfFile: folder.path + "/out/deep/a.txt", encoding: .utf8).count == 600_000)
        #expect(Self.leftovers(folder.path).isEmpty)
    }

    @Test(.enabled(if: Tmpfs.available, "mounting a tmpfs needs root"))
    func aRunMovesAcrossFileSystems() throws {
        let folder = try TemporaryFolder("move-across")
        defer { folder.remove() }
        let archive = try #require(Tmpfs(at: folder.path + "/archive"))
        try DisposalTests.inputs(folder)
        let (_, reports) = try DisposalTests.run(folder, "on_success: { move_to: archive/done }")
        let disposal = (reports["in/a/b/one.txt"]?["facts"] as? [String: Any])?["disposal"] as? [String: Any]
        #expect(disposal?["method"] as? String == "copied")
        #expect(DisposalTests.text(archive.path + "/done/a/b/one.txt") == "hello")
        #expect(DisposalTests.text(archive.path + "/done/two.txt") == "hi")
        #expect(!DisposalTests.exists(folder.path + "/in/a/b/one.txt"))
        #expect(Self.leftovers(archive.path).isEmpty)
        // A taken name on the other file system: not replaced either.
        try folder.file("in/two.txt", "hi")
        try Data("taken".utf8).write(to: URL(fileURLWithPath: archive.path + "/done/two.txt"))
        let (_, again) = try DisposalTests.run(folder, "on_success: { move_to: archive/done }")
        #expect(again["in/two.txt"]?["status"] as? String == "failed")
        #expect(DisposalTests.text(archive.path + "/done/two.txt") == "taken")
        #expect(DisposalTests.text(folder.path + "/in/two.txt") == "hi")
    }
}
