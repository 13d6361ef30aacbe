import Foundation
import NativeSQLite
import Testing

@testable import Ingest
@testable import IngestJournal
@testable import IngestRun
@testable import IngestStages

/// `kill -9` of the real `ingest` binary at random points of a batch that transcodes photos, then a second run:
/// the journal stays consistent, nothing the first run journaled as done is redone, every file ends done exactly
/// once, and no temp or work file is left behind.
@Suite(.serialized) struct JournalCrashTests {
    let ingest = TestPaths.ingest
    static let fileCount = 80

    /// SplitMix64: a reproducible sequence per seed, so a failing seed can be run again.
    struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    func makeBatch(_ folder: TemporaryFolder, count: Int = fileCount) throws -> String {
        let base = folder.path + "/base.jpg"
        let made = try runTool(
            "ffmpeg", ["-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=1600x1200", "-frames:v", "1", base])
        try #require(made.status == 0, "ffmpeg: \(made.stderr)")
        for index in 0..<count {
            let target = folder.path + "/photos/d\(index % 4)/p\(String(format: "%03d", index)).jpg"
            try FileManager.default.createDirectory(
                atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: base, toPath: target)
        }
        return try folder.file(
            "p.yml",
            "version: 1\nname: crash\nconcurrency: 2\nstages:\n  - validate: { extensions: [jpg] }\n"
                + "  - jpeg: { quality: 0.8 }\n")
    }

    /// Files under the work folder other than its marker.
    func workFiles(_ folder: TemporaryFolder) -> [String] {
        let work = folder.path + "/.ingest/work"
        let all = FileManager.default.enumerator(atPath: work)?.allObjects as? [String] ?? []
        return all.filter { name in
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: work + "/" + name, isDirectory: &isDirectory)
            return !isDirectory.boolValue && name != WorkFolder.marker
        }
    }

    func records(_ folder: TemporaryFolder) throws -> [String: JournalRecord] {
        let journal = try SQLiteJournal(path: folder.path + "/.ingest/journal.sqlite", writer: false, create: false)
        var records: [String: JournalRecord] = [:]
        try journal.forEachRecord { records[$0.relativePath] = $0 }
        return records
    }

    @Test(arguments: [1, 2, 3, 4, 5] as [UInt64])
    func killedAtARandomPointThenResumed(seed: UInt64) throws {
        let folder = try TemporaryFolder("crash-\(seed)")
        defer { folder.remove() }
        let pipeline = try makeBatch(folder)
        var random = SeededGenerator(state: seed)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: ingest)
        process.arguments = ["run", pipeline, "photos", "-q"]
        process.currentDirectoryURL = URL(fileURLWithPath: folder.path)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        usleep(UInt32.random(in: 50_000...1_200_000, using: &random))
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()

        // The journal is a consistent SQLite file whatever moment the kill hit (a very early kill leaves none).
        var afterKill: [String: JournalRecord] = [:]
        if FileManager.default.fileExists(atPath: folder.path + "/.ingest/journal.sqlite") {
            let database = try Database(path: folder.path + "/.ingest/journal.sqlite", create: false)
            #expect(try database.prepare("PRAGMA integrity_check").rows() == [[.text("ok")]])
            afterKill = try records(folder)
        }
        let doneAfterKill = Set(afterKill.values.filter { $0.state == .done }.map(\.relativePath))
        print(
            "seed \(seed): \(doneAfterKill.count) of \(Self.fileCount) done, \(afterKill.count) journaled at the kill")
        for record in afterKill.values where record.state == .done {
            #expect(record.facts["jpeg"] != nil, "done without its result: \(record.relativePath)")
            #expect(record.sha256?.hasPrefix("xxh3-128:") == true && record.sha256?.count == 41)
        }

        let second = try runCommand(
            ingest, ["run", pipeline, "photos", "-q", "--report", "second.jsonl"], directory: folder.path)
        #expect(second.status == 0, "second run: \(second.stderr)")
        let lines = try String(contentsOfFile: folder.path + "/second.jsonl", encoding: .utf8)
            .split(separator: "\n")
        #expect(lines.count == Self.fileCount)
        var resumed = Set<String>()
        var redone = Set<String>()
        for line in lines {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let path = try #require(object["path"] as? String).replacingOccurrences(of: "photos/", with: "")
            switch (object["status"] as? String, object["reason"] as? String) {
            case ("skipped", JournalReason.alreadyDone?): resumed.insert(path)
            case ("passed", nil): redone.insert(path)
            default: Issue.record("unexpected line after a crash: \(line)")
            }
        }
        // Exactly the files journaled as done are skipped; every other one is done now, and none twice.
        #expect(resumed == doneAfterKill)
        #expect(resumed.isDisjoint(with: redone))
        #expect(resumed.count + redone.count == Self.fileCount)

        let final = try records(folder)
        #expect(final.count == Self.fileCount)
        #expect(final.values.allSatisfy { $0.state == .done })
        for path in doneAfterKill { #expect(final[path]?.attempts == 1, "\(path) was worked on again") }
        #expect(workFiles(folder).isEmpty, "left in the work folder: \(workFiles(folder))")

        let third = try runCommand(ingest, ["run", pipeline, "photos"], directory: folder.path)
        #expect(third.stdout.hasSuffix("0 passed, 0 failed, \(Self.fileCount) skipped\n"))
    }

    /// A work folder on a full disk (a 1 MiB tmpfs, filled up): every transcode fails with the system's words,
    /// the run ends normally with exit code 1, the journal stays consistent, and once there is room again the next
    /// run does every file. Needs root to mount the tmpfs; elsewhere the test says so and passes.
    @Test func aFullDiskFailsFilesCleanlyAndTheNextRunContinues() throws {
        let folder = try TemporaryFolder("enospc")
        defer { folder.remove() }
        let scratch = try folder.folder("scratch")
        guard geteuid() == 0,
            (try? runCommand("/bin/mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", scratch]))?.status == 0
        else {
            print("aFullDiskFailsFilesCleanlyAndTheNextRunContinues: not run (mounting a tmpfs needs root)")
            return
        }
        defer { _ = try? runCommand("/bin/umount", [scratch]) }
        let pipeline = try makeBatch(folder, count: 6)
        // Leave about 40 KiB: less than one transcoded photo.
        let filler = scratch + "/filler"
        let size = 1024 * 1024 - 40 * 1024
        #expect(FileManager.default.createFile(atPath: filler, contents: Data(count: size)))
        let arguments = ["run", pipeline, "photos", "-q", "--work-dir", scratch + "/work", "--journal", "j.sqlite"]

        let full = try runCommand(ingest, arguments + ["--report", "full.jsonl"], directory: folder.path)
        #expect(full.status == 1, "stderr: \(full.stderr)")
        let lines = try String(contentsOfFile: folder.path + "/full.jsonl", encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 6)
        #expect(lines.allSatisfy { $0.contains("\"status\":\"failed\"") && $0.contains("jpeg") })
        #expect(lines.allSatisfy { $0.lowercased().contains("no space left on device") })
        let journal = try SQLiteJournal(path: folder.path + "/j.sqlite", writer: false, create: false)
        #expect(try journal.counts() == [.failed: 6])

        try FileManager.default.removeItem(atPath: filler)
        let roomy = try runCommand(ingest, arguments, directory: folder.path)
        #expect(roomy.status == 0, "stderr: \(roomy.stderr)")
        #expect(roomy.stdout.isEmpty)
        #expect(try journal.counts() == [.done: 6])
        let left = (FileManager.default.enumerator(atPath: scratch + "/work")?.allObjects as? [String] ?? [])
            .filter { !$0.hasSuffix(".ingest-work") && ($0 as NSString).pathExtension != "" }
        #expect(left.isEmpty, "left in the work folder: \(left)")
    }
}

/// `kill -9` in the middle of uploads to the fixture backend, then a second run: tickets asked for before the kill
/// are reused from the journal, every file ends stored once (one object per file), only a call that was in flight
/// at the kill is repeated, and every callback is delivered once (a repeat is refused with 409 and counts as done).
@Suite(.serialized) struct JournalUploadCrashTests {
    let ingest = TestPaths.ingest

    @Test(arguments: [11, 12] as [UInt64])
    func killedMidUploadThenResumed(seed: UInt64) throws {
        // Each callback's answer is held half a second after the server acted on it, so a kill often lands in
        // between (the case that repeats a callback).
        let backend = try FixtureBackend(
            faults: #"""
                [{"method": "POST", "path": "/api/analyze-video", "action": "act_then_hang", "seconds": 0.5,
                  "times": 1000}]
                """#)
        defer { backend.stop() }
        let folder = try TemporaryFolder("upload-crash-\(seed)")
        defer { folder.remove() }
        let count = 12
        for index in 0..<count {
            _ = try writeRandomFile(
                folder.path + "/in/user\(index % 3)/clip\(index).mov", size: 400_000 + index, seed: UInt64(index) + 1)
        }
        let pipeline = try folder.file("p.yml", UploadPipelineTests.hockeyPipeline(backend.base))
        var random = JournalCrashTests.SeededGenerator(state: seed)
        let process = try startIngest(["run", pipeline, "in", "-q"], in: folder.path)
        usleep(UInt32.random(in: 100_000...600_000, using: &random))
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()

        // Not quiet: a failure shows each file's rule and the server's answer in the expectation below.
        let second = try runCommand(
            ingest, ["run", pipeline, "in"], environment: environmentWithoutProxies(), directory: folder.path)
        #expect(second.status == 0, "second run: \(second.stdout)\(second.stderr)")
        // Each file is stored once, under the key its journaled uuid and ticket name.
        #expect(try backend.objects().count == count)
        // A call the server answered while the client was being killed was never journaled as done, so it is
        // repeated: at most one per file in flight (concurrency 2). A repeated ticket request is a new ticket (its
        // range stays); a repeated callback is refused by the server with 409, which `on_conflict: done` counts as
        // done, so every callback is delivered exactly once.
        let tickets = try backend.counts("tickets")["/api/upload-url"] ?? 0
        let callbacks = try backend.counts("callbacks")["/api/analyze-video"] ?? 0
        let repeats = try backend.counts("callback_repeats")["/api/analyze-video"] ?? 0
        #expect((count...count + 2).contains(tickets), "tickets: \(tickets)")
        #expect(callbacks == count, "callbacks: \(callbacks)")
        #expect((0...2).contains(repeats), "refused repeats: \(repeats)")
        let journal = try SQLiteJournal(path: folder.path + "/.ingest/journal.sqlite", writer: false, create: false)
        #expect(try journal.counts() == [.done: count])
    }
}

/// An upload whose signed URL expired renews its ticket; the renewed answer replaces the journaled one before the
/// upload starts, so a run killed between the upload and the callback calls back, once resumed, with the renewed
/// ticket's storage path (the expired ticket's object never arrived: the server answers 404 to it).
@Suite(.serialized) struct JournalRenewedTicketTests {
    /// One file through seed 001 (ticket → PUT → callback) with an expired first ticket and a callback that hangs,
    /// `ingest run` killed once the callback is journaled as started, then run again without faults.
    /// `journal`: the `--journal` arguments (none: the SQLite file in the cwd); `stages` reads the file's stages.
    static func renewedTicketIsUsedAfterAKill(
        _ name: String, journal: [String] = [], stages: @escaping (TemporaryFolder) throws -> [JournalStage]
    ) throws {
        let backend = try FixtureBackend(
            faults: #"""
                [{"method": "POST", "path": "/api/upload-url", "action": "expired_ticket", "times": 1},
                 {"method": "POST", "path": "/api/analyze-video", "action": "delay", "seconds": 20, "times": 1}]
                """#)
        defer { backend.stop() }
        let folder = try TemporaryFolder(name)
        defer { folder.remove() }
        _ = try writeRandomFile(folder.path + "/in/alice/clip.mov", size: 300_000, seed: 7)
        let pipeline = try folder.file("p.yml", UploadPipelineTests.hockeyPipeline(backend.base))
        // The callback (position 2) is journaled as started only after the upload was journaled as done.
        try killIngest(["run", pipeline, "in", "-q"] + journal, in: folder.path, at: "the callback") {
            (try? stages(folder))?.contains(where: { $0.position == 2 && $0.status == .started }) == true
        }
        let storedKeys = Array(try backend.objects().keys)
        try #require(storedKeys.count == 1, "stored: \(storedKeys)")

        try backend.setFaults("[]")
        let second = try runCommand(
            TestPaths.ingest, ["run", pipeline, "in"] + journal, environment: environmentWithoutProxies(),
            directory: folder.path)
        #expect(second.status == 0, "second run: \(second.stdout)\(second.stderr)")
        // Expired ticket, renewed ticket; the resumed run asked for none.
        #expect(try backend.counts("tickets") == ["/api/upload-url": 2])
        let callbacks = (try backend.state()["json"] as? [String: [[String: Any]]])?["/api/analyze-video"] ?? []
        #expect(!callbacks.isEmpty)
        for body in callbacks {
            #expect(body["storage_path"] as? String == storedKeys[0], "callback body: \(body)")
        }
    }

    /// The stages journaled for the one file of the run (none before its row is written).
    static func stagesOfTheOnlyFile(_ journal: any JournalStore) throws -> [JournalStage] {
        var ids: [Int64] = []
        try journal.forEachRecord { ids.append($0.id) }
        return try ids.first.map { try journal.stages(fileID: $0) } ?? []
    }

    @Test func sqliteJournal() throws {
        try Self.renewedTicketIsUsedAfterAKill("renew-sqlite") { folder in
            // A bare read-only connection: a `SQLiteJournal`, even a reader, commits and checkpoints as it closes.
            let database = try Database(
                path: folder.path + "/.ingest/journal.sqlite", readOnly: true, create: false)
            database.setBusyTimeout(milliseconds: 1_000)
            let rows = try database.prepare("SELECT position, name, status FROM stages").rows()
            return rows.map {
                JournalStage(
                    position: Int($0[0].int ?? -1), name: $0[1].string ?? "",
                    status: JournalStage.Status(rawValue: $0[2].string ?? "") ?? .failed, attempts: 1, outputs: [:],
                    error: nil)
            }
        }
    }
}
