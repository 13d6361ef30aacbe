import Foundation
import Testing

@testable import Ingest

/// Issue 23 §2: `on_success` / `on_failure` move (or delete) a file once the journal has it as done, keeping its path
/// relative to the input folder, never replacing a name taken in the target; a file moved away is not taken again,
/// one that comes back with new content is.
@Suite(.serialized) struct DisposalTests {
    static func pipeline(_ disposal: String) -> String {
        """
        version: 1
        name: disposal
        \(disposal)
        stages:
          - validate: { extensions: [txt], min_bytes: 2 }
          - upload: { method: local, dir: dest }

        """
    }

    /// `in/a/b/one.txt` and `in/two.txt` pass, `in/a/bad.txt` (one byte) fails `min_bytes`.
    static func inputs(_ folder: TemporaryFolder) throws {
        try folder.file("in/a/b/one.txt", "hello")
        try folder.file("in/two.txt", "hi")
        try folder.file("in/a/bad.txt", "x")
    }

    static func run(_ folder: TemporaryFolder, _ disposal: String, _ arguments: [String] = []) throws
        -> (CommandResult, [String: [String: Any]])
    {
        let pipeline = try folder.file("pipeline.yml", pipeline(disposal))
        let report = folder.path + "/report-\(UUID().uuidString.prefix(6)).jsonl"
        let result = try runCommand(
            TestPaths.ingest, ["run", pipeline, "in", "--report", report, "-q"] + arguments,
            environment: environmentWithoutProxies(), directory: folder.path)
        var byPath: [String: [String: Any]] = [:]
        for object in reportObjects(report) { byPath[object["path"] as? String ?? ""] = object }
        return (result, byPath)
    }

    static func text(_ path: String) -> String? { try? String(contentsOfFile: path, encoding: .utf8) }

    static func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    @Test func acceptedFilesAreMovedKeepingTheirTree() throws {
        let folder = try TemporaryFolder("disposal-move")
        defer { folder.remove() }
        try Self.inputs(folder)
        let (result, reports) = try Self.run(folder, "on_success: { move_to: done }")
        #expect(result.status == 1, "one file fails validate")
        #expect(Self.text(folder.path + "/done/a/b/one.txt") == "hello")
        #expect(Self.text(folder.path + "/done/two.txt") == "hi")
        #expect(Self.text(folder.path + "/dest/a/b/one.txt") == "hello", "uploaded before it was moved")
        #expect(!Self.exists(folder.path + "/in/a/b/one.txt") && !Self.exists(folder.path + "/in/two.txt"))
        #expect(Self.text(folder.path + "/in/a/bad.txt") == "x", "a failed file stays without on_failure")
        let disposal = (reports["in/two.txt"]?["facts"] as? [String: Any])?["disposal"] as? [String: Any]
        #expect(disposal?["action"] as? String == "moved")
        #expect(disposal?["to"] as? String == "done/two.txt")
        #expect(disposal?["method"] as? String == "renamed")
    }

    @Test func acceptedFilesAreDeleted() throws {
        let folder = try TemporaryFolder("disposal-delete")
        defer { folder.remove() }
        try Self.inputs(folder)
        let (_, reports) = try Self.run(folder, "on_success: { delete: true }")
        #expect(Self.text(folder.path + "/dest/two.txt") == "hi")
        #expect(!Self.exists(folder.path + "/in/two.txt") && !Self.exists(folder.path + "/in/a/b/one.txt"))
        #expect(Self.exists(folder.path + "/in/a/bad.txt"))
        #expect(reports["in/two.txt"]?["status"] as? String == "passed")
    }

    @Test func failedFilesGoAsideWithTheirReport() throws {
        let folder = try TemporaryFolder("disposal-failure")
        defer { folder.remove() }
        try Self.inputs(folder)
        let (_, reports) = try Self.run(folder, "on_failure: { move_to: failed }")
        #expect(Self.text(folder.path + "/failed/a/bad.txt") == "x")
        #expect(!Self.exists(folder.path + "/in/a/bad.txt"))
        #expect(Self.text(folder.path + "/in/two.txt") == "hi", "a passed file stays without on_success")
        let beside = try #require(Self.text(folder.path + "/failed/a/bad.txt.report.json"))
        let report = try #require(try JSONSerialization.jsonObject(with: Data(beside.utf8)) as? [String: Any])
        let failures = report["failures"] as? [[String: Any]]
        #expect(failures?.first?["rule"] as? String == "min_bytes")
        #expect(reports["in/a/bad.txt"]?["status"] as? String == "failed")
    }

    @Test func aNameTakenInTheTargetFailsClearlyAndIsNotReplaced() throws {
        let folder = try TemporaryFolder("disposal-taken")
        defer { folder.remove() }
        try Self.inputs(folder)
        try folder.file("done/two.txt", "someone else's")
        let (result, reports) = try Self.run(folder, "on_success: { move_to: done }")
        #expect(result.status == 1)
        #expect(Self.text(folder.path + "/done/two.txt") == "someone else's", "never replaced")
        #expect(Self.text(folder.path + "/in/two.txt") == "hi", "the file stays")
        #expect(Self.text(folder.path + "/done/a/b/one.txt") == "hello", "the other files still move")
        let two = reports["in/two.txt"]
        #expect(two?["status"] as? String == "failed")
        let failure = (two?["failures"] as? [[String: Any]])?.first
        #expect(failure?["stage"] as? String == "on_success")
        #expect(failure?["rule"] as? String == "move")
        let message = failure?["message"] as? String ?? ""
        #expect(message.contains("done/two.txt already exists"), "\(message)")
        #expect(message.contains("journal keeps it as done"), "\(message)")
        // The journal keeps it done: the next run does not upload it again, and moves it once the name is free.
        try FileManager.default.removeItem(atPath: folder.path + "/done/two.txt")
        try FileManager.default.removeItem(atPath: folder.path + "/dest/two.txt")
        let (_, again) = try Self.run(folder, "on_success: { move_to: done }")
        #expect(again["in/two.txt"]?["status"] as? String == "skipped")
        #expect(!Self.exists(folder.path + "/dest/two.txt"), "not uploaded twice")
        #expect(Self.text(folder.path + "/done/two.txt") == "hi")
    }

    @Test func aMovedFileIsNotTakenAgainButOneThatComesBackWithNewContentIs() throws {
        let folder = try TemporaryFolder("disposal-again")
        defer { folder.remove() }
        try folder.file("in/two.txt", "hi")
        _ = try Self.run(folder, "on_success: { move_to: done }")
        #expect(Self.text(folder.path + "/done/two.txt") == "hi")
        let (_, second) = try Self.run(folder, "on_success: { move_to: done }")
        #expect(second.isEmpty, "nothing left to take: \(second.keys)")
        // Archived elsewhere by the operator; then a new recording under the same name lands.
        try FileManager.default.removeItem(atPath: folder.path + "/done/two.txt")
        try folder.file("in/two.txt", "hi, again")
        let (_, third) = try Self.run(folder, "on_success: { move_to: done }")
        #expect(third["in/two.txt"]?["status"] as? String == "passed")
        #expect(Self.text(folder.path + "/dest/two.txt") == "hi, again", "uploaded anew")
        #expect(Self.text(folder.path + "/done/two.txt") == "hi, again")
    }

    @Test func aDryRunSaysWhatWouldMoveAndMovesNothing() throws {
        let folder = try TemporaryFolder("disposal-dry")
        defer { folder.remove() }
        try Self.inputs(folder)
        let pipeline = try folder.file(
            "pipeline.yml", Self.pipeline("on_success: { move_to: done }\non_failure: { move_to: failed }"))
        let result = try runCommand(
            TestPaths.ingest, ["run", pipeline, "in", "--dry-run"], environment: environmentWithoutProxies(),
            directory: folder.path)
        #expect(result.stdout.contains("on_success: would move to done/two.txt"), "\(result.stdout)")
        #expect(result.stdout.contains("on_failure: would move to failed/a/bad.txt"), "\(result.stdout)")
        #expect(Self.exists(folder.path + "/in/two.txt") && !Self.exists(folder.path + "/done"))
    }

    @Test func aTargetInsideTheInputFolderIsRefused() throws {
        let folder = try TemporaryFolder("disposal-inside")
        defer { folder.remove() }
        try Self.inputs(folder)
        for target in ["in/done", "in", "./in/../in/x"] {
            let (result, _) = try Self.run(folder, "on_success: { move_to: \(target) }")
            #expect(result.status == 2, "\(target): \(result.stderr)")
            #expect(result.stderr.contains("inside the input folder") || result.stderr.contains("is the input folder"))
            #expect(Self.exists(folder.path + "/in/two.txt"))
        }
        let (both, _) = try Self.run(folder, "on_success: { move_to: done, delete: true }")
        #expect(both.status == 2)
        #expect(both.stderr.contains("not both"), "\(both.stderr)")
    }
}
