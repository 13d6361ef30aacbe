import Foundation
import Testing

@testable import Ingest

/// Issue #29 §5: Firestore's ALREADY_EXISTS is done only when it is this file's. Two users each send a `game1.mov`
/// through a pipeline whose job id is the file's stem (`jobs/{{file.stem}}`): the second user's create meets the
/// first user's document. Counted as done, the run would wait for that job and save the first user's summaries as
/// the second's feedback; it fails with `request.conflict` instead, saving nothing — on a first call, and on a retry
/// after a lost answer too (the document read back is not this file's). A lost answer of the file's own create
/// counts as done, one document made.
extension SeedPipelinesFirestore {
    /// Seed 000 with the job named after the file's stem instead of its journal uuid.
    static func stemPipeline(in folder: TemporaryFolder) throws -> String {
        let text = try String(contentsOfFile: pipeline, encoding: .utf8)
        #expect(text.contains("document: \"jobs/{{uuid}}\""))
        return try folder.file(
            "stem.yml", text.replacingOccurrences(of: "jobs/{{uuid}}", with: "jobs/{{file.stem}}"))
    }

    static let commitFault = #"[{"method": "POST", "path": "/v1/", "action": "act_then_reset", "times": 1}]"#

    @Test(arguments: [false, true]) func anotherUsersDocumentUnderTheSameIdFailsTheFile(lostAnswer: Bool) throws {
        let backend = try Self.backend()
        defer { backend.stop() }
        let folder = try TemporaryFolder("seed000-foreign-job")
        defer { folder.remove() }
        let pipeline = try Self.stemPipeline(in: folder)
        try copySample("good/plain.mov", to: folder.path + "/alice/game1.mov")
        try copySample("good/plain.mov", to: folder.path + "/bob/game1.mov")
        var alice = Self.environment(backend)
        alice["PUCKBUDDY_USER_ID"] = "uid-7"
        let first = try Self.run(["run", pipeline, "alice", "--journal", "alice.sqlite"], in: folder, alice)
        #expect(first.status == 0, "\(first.stdout)\(first.stderr)")
        #expect(FileManager.default.fileExists(atPath: folder.path + "/alice/game1.parent.txt"))

        if lostAnswer { try backend.setFaults(Self.commitFault) }
        let second = try Self.run(
            ["run", pipeline, "bob", "--journal", "bob.sqlite"], in: folder, Self.environment(backend))
        #expect(second.status == 1, "\(second.stdout)\(second.stderr)")
        let name = "projects/puck-buddy/databases/(default)/documents/jobs/game1"
        #expect(second.stdout.contains("request.conflict: document \(name)"), "\(second.stdout)")
        let why =
            lostAnswer
            ? "already exists and is not this file's: its userId, storagePath differ from what this file writes"
            : "to this file's first call, so no earlier call of this file made what it refers to"
        #expect(second.stdout.contains(why), "\(second.stdout)")
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/bob/game1.parent.txt"))
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/bob/game1.coach.txt"))
        let jobs = try Self.jobs(backend)
        #expect(jobs.count == 1)
        #expect(jobs.values.first.flatMap { Self.field($0, "userId") as? String } == "uid-7")
    }

    /// Firestore made the job and the connection dropped before its answer: the retry meets ALREADY_EXISTS, the
    /// document read back holds this file's userId and storagePath, and the file is done with one job.
    @Test func aLostAnswerOfTheFilesOwnCreateCountsAsDone() throws {
        let backend = try Self.backend(faults: Self.commitFault)
        defer { backend.stop() }
        let folder = try TemporaryFolder("seed000-lost-commit")
        defer { folder.remove() }
        try copySample("good/plain.mov", to: folder.path + "/in/game1.mov")
        let result = try Self.run(["run", Self.pipeline, "in"], in: folder, Self.environment(backend))
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("already done: the server answered 409 Conflict: Document already exists"))
        #expect(try Self.firestoreCount(backend, "commits") == 1)
        #expect(try Self.jobs(backend).count == 1)
        let statuses = try backend.requests().filter { ($0[1] as? String ?? "").hasSuffix(":commit") }
            .map { "\($0[2])" }
        #expect(statuses == ["reset after 200", "409"], "\(statuses)")
        #expect(FileManager.default.fileExists(atPath: folder.path + "/in/game1.parent.txt"))
    }
}
