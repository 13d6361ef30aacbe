import Foundation
import IngestNative
import Testing

@testable import Ingest

/// The SQLite wrapper keeps SQLite's own words; the journal makes a second run skip what the first one finished,
/// redo what changed, and skip duplicates before any stage runs.
@Suite struct JournalTests {
    func pipeline(_ yaml: String) throws -> Pipeline {
        try Pipeline.parse(yaml: "version: 1\nname: journal-test\n" + yaml, source: "test.yml", environment: [:])
    }

    static let validateOnly = "concurrency: 1\nstages:\n  - validate: { extensions: [txt], sniff: false }\n"

    /// Runs `pipeline` over `paths` with a journal at `<folder>/.ingest/journal.sqlite`; returns reports by path.
    func run(
        _ pipeline: Pipeline, _ folder: TemporaryFolder, paths: [String]? = nil, resume: ResumePolicy = .resume
    ) throws -> [String: ItemReport] {
        let journal = try Journal(path: folder.path + "/.ingest/journal.sqlite")
        let runner = Runner(
            pipeline: pipeline, settings: RunSettings(workDirectory: folder.path + "/.ingest/work", environment: [:]),
            journal: journal, resume: resume)
        var reports: [String: ItemReport] = [:]
        try runner.run(paths: paths ?? [folder.path + "/media"]) { reports[$0.relativePath] = $0 }
        try journal.close()
        return reports
    }

    func statuses(_ reports: [String: ItemReport]) -> [String: String] {
        reports.mapValues { report in
            report.skipReason == JournalReason.alreadyDone ? "resumed" : report.status.rawValue
        }
    }

    @Test func databaseErrorsKeepSQLiteText() throws {
        let folder = try TemporaryFolder("sqlite")
        defer { folder.remove() }
        let database = try Database(path: folder.path + "/x.sqlite")
        try database.execute("CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT NOT NULL)")
        let insert = try database.prepare("INSERT INTO t(a, b) VALUES (?1, ?2)")
        try insert.run([.integer(1), .text("é ✓")])
        #expect(try database.prepare("SELECT b FROM t").rows() == [[.text("é ✓")]])
        do {
            try insert.run([.integer(1), .text("again")])
            Issue.record("a duplicate key was accepted")
        } catch {
            #expect(error.message.contains("UNIQUE constraint failed: t.a"))
            #expect(error.description.hasPrefix("sqlite3_step("))
        }
        do {
            _ = try database.prepare("SELEC nonsense")
            Issue.record("bad SQL compiled")
        } catch {
            #expect(error.message.contains("syntax error"))
        }
        #expect(throws: SQLiteError.self) { try Database(path: folder.path + "/missing/x.sqlite") }
    }

    /// A new file's row is written by a plain INSERT; should a row exist after all, the write falls back to the
    /// upsert instead of failing the batch (and with it every file the batch records).
    @Test func aNewFilesRowThatExistsAlreadyIsUpdated() throws {
        let folder = try TemporaryFolder("insert")
        defer { folder.remove() }
        let path = folder.path + "/journal.sqlite"
        let journal = try Journal(path: path)
        let start = Journal.Start(
            root: "/media", relativePath: "a.txt", path: "media/a.txt", size: 3, modified: 1, inode: 7, sha256: nil,
            pipeline: "p", configHash: "c", templateValues: [:], dedupeKey: nil, keepStages: false, existingID: nil)
        try journal.finish(start, id: nil, state: .failed, failures: [], reason: nil, facts: [:])
        try journal.commit()
        try journal.finish(start, id: nil, state: .done, failures: [], reason: nil, facts: ["size": .int(3)])
        try journal.commit()
        let record = try #require(try journal.record(root: "/media", relativePath: "a.txt"))
        #expect(record.state == .done)
        #expect(record.attempts == 2)
        #expect(record.facts == ["size": .int(3)])
        #expect(record.templateValues.isEmpty)
        try journal.close()
        // The rows are in the write-ahead log, which close leaves in place: a new connection reads through it.
        #expect(try Journal(path: path, writer: false, create: false).counts() == [.done: 1])
    }

    @Test func secondRunSkipsEverythingAndAChangedFileIsRedone() throws {
        let folder = try TemporaryFolder("resume")
        defer { folder.remove() }
        for name in ["a.txt", "b.txt", "sub/c.txt", "bad.bin"] { try folder.file("media/" + name, "hello " + name) }
        // The dedupe key reads each file's hash, so the journal has it for the content check.
        let pipeline = try pipeline("dedupe: {key: \"{{sha256}}-{{date.yyyyMMdd}}\"}\n" + Self.validateOnly)

        let first = try run(pipeline, folder)
        #expect(
            statuses(first) == ["a.txt": "passed", "b.txt": "passed", "sub/c.txt": "passed", "bad.bin": "failed"])
        let firstDate = try Journal(path: folder.path + "/.ingest/journal.sqlite", writer: false, create: false)
            .record(root: Journal.canonicalRoot(folder.path + "/media"), relativePath: "b.txt")?.templateValues["date"]

        // Failed files are retried by default; done ones are skipped.
        let second = try run(pipeline, folder)
        #expect(
            statuses(second) == ["a.txt": "resumed", "b.txt": "resumed", "sub/c.txt": "resumed", "bad.bin": "failed"])

        // New content (same size, so the hash decides) and a touch without a change.
        try folder.file("media/b.txt", "HELLO b.txt")
        let touched = folder.path + "/media/a.txt"
        try FileManager.default.setAttributes(
            [.modificationDate: Date(timeIntervalSinceNow: -3600)], ofItemAtPath: touched)
        let third = try run(pipeline, folder)
        #expect(
            statuses(third) == ["a.txt": "resumed", "b.txt": "passed", "sub/c.txt": "resumed", "bad.bin": "failed"])

        let journal = try Journal(path: folder.path + "/.ingest/journal.sqlite", writer: false, create: false)
        let record = try #require(
            try journal.record(root: Journal.canonicalRoot(folder.path + "/media"), relativePath: "b.txt"))
        #expect(record.state == .done)
        #expect(record.attempts == 2)
        #expect(record.sha256 == (try ContentHash.sha256(path: folder.path + "/media/b.txt", stage: "test")))
        // The date the key used is the first run's, kept for every later attempt.
        #expect(record.templateValues["date"] != nil)
        #expect(record.templateValues["date"] == firstDate)

        // Without a known hash (a validate-only pipeline reads no file whole), a touched file is simply redone.
        let plain = try self.pipeline(Self.validateOnly)
        _ = try run(plain, folder)
        try FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: touched)
        #expect(statuses(try run(plain, folder))["a.txt"] == "passed")
    }

    @Test func aChangedPipelineRedoesEverythingAndForceToo() throws {
        let folder = try TemporaryFolder("config")
        defer { folder.remove() }
        for name in ["a.txt", "b.txt"] { try folder.file("media/" + name, name) }
        let original = try pipeline(Self.validateOnly)
        _ = try run(original, folder)
        #expect(Set(statuses(try run(original, folder)).values) == ["resumed"])

        // Concurrency and the name do not change a file's result; a stage option does.
        let renamed = try Pipeline.parse(
            yaml:
                "version: 1\nname: other\nconcurrency: 3\nstages:\n  - validate: {sniff: false,  extensions: [txt]}\n",
            environment: [:])
        #expect(renamed.configHash == original.configHash)
        let changed = try pipeline("stages:\n  - validate: { extensions: [txt], sniff: false, max_bytes: 1MB }\n")
        #expect(changed.configHash != original.configHash)
        #expect(Set(statuses(try run(changed, folder)).values) == ["passed"])
        #expect(Set(statuses(try run(changed, folder)).values) == ["resumed"])
        #expect(Set(statuses(try run(changed, folder, resume: .force)).values) == ["passed"])
    }

    @Test func retryFailedLeavesOtherFilesAlone() throws {
        let folder = try TemporaryFolder("retry")
        defer { folder.remove() }
        try folder.file("media/a.txt", "a")
        try folder.file("media/bad.bin", "b")
        let pipeline = try pipeline(Self.validateOnly)
        _ = try run(pipeline, folder)
        try folder.file("media/new.txt", "n")
        let retried = try run(pipeline, folder, resume: .retryFailed)
        #expect(statuses(retried) == ["a.txt": "resumed", "bad.bin": "failed", "new.txt": "skipped"])
        #expect(retried["new.txt"]?.skipReason == "not in the journal as failed (--retry-failed)")
    }

    @Test func sameContentUnderTwoNamesIsIngestedOnce() throws {
        let folder = try TemporaryFolder("dedupe")
        defer { folder.remove() }
        try folder.file("media/a.txt", "same bytes")
        try folder.file("media/copy/a-again.txt", "same bytes")
        try folder.file("media/other.txt", "other bytes")
        let pipeline = try pipeline("dedupe: {key: \"{{sha256}}-{{date.yyyyMMdd}}\"}\n" + Self.validateOnly)
        let first = try run(pipeline, folder)
        #expect(first["a.txt"]?.status == .passed)
        #expect(first["other.txt"]?.status == .passed)
        let duplicate = try #require(first["copy/a-again.txt"])
        #expect(duplicate.status == .skipped)
        #expect(duplicate.skipReason?.hasPrefix("duplicate of \(folder.path)/media/a.txt (dedupe key '") == true)

        // Later runs: the original is done, the copy is still a duplicate, and a third copy elsewhere is too.
        try folder.file("more/a-third.txt", "same bytes")
        let second = try run(pipeline, folder, paths: [folder.path + "/media", folder.path + "/more"])
        #expect(second["a.txt"]?.skipReason == JournalReason.alreadyDone)
        #expect(second["copy/a-again.txt"]?.skipReason == duplicate.skipReason)
        #expect(second["a-third.txt"]?.skipReason == duplicate.skipReason)
    }

    @Test func onePetRecordingPerDayIsEnforcedBeforeAnyStage() throws {
        let folder = try TemporaryFolder("pets")
        defer { folder.remove() }
        try folder.file("media/rex/morning.txt", "rex 1")
        // Would fail validation if any stage ran on it: the skip comes first.
        try folder.file("media/rex/second.bin", "rex 2")
        try folder.file("media/max/visit.txt", "max 1")
        let pipeline = try pipeline("dedupe: {key: \"{{dir.name}}-{{date.yyyyMMdd}}\"}\n" + Self.validateOnly)
        let reports = try run(pipeline, folder)
        #expect(reports["rex/morning.txt"]?.status == .passed)
        #expect(reports["max/visit.txt"]?.status == .passed)
        let second = try #require(reports["rex/second.bin"])
        #expect(second.status == .skipped)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd"
        let today = formatter.string(from: Date())
        #expect(
            second.skipReason
                == "duplicate of \(folder.path)/media/rex/morning.txt (dedupe key 'rex-\(today)')")
    }

    @Test func dedupeKeysAreCheckedWhenThePipelineLoads() throws {
        #expect(throws: PipelineFileErrors.self) {
            try pipeline("dedupe: {key: \"{{ticket.id}}\"}\n" + Self.validateOnly)
        }
        #expect(throws: PipelineFileErrors.self) { try pipeline("dedupe: {key: \"constant\"}\n" + Self.validateOnly) }
        #expect(throws: PipelineFileErrors.self) { try pipeline("max_work_bytes: 0\n" + Self.validateOnly) }
        let loaded = try pipeline("dedupe: {key: \"{{file.name}}\"}\nmax_work_bytes: 10MB\n" + Self.validateOnly)
        #expect(loaded.dedupe?.source == "{{file.name}}")
        #expect(loaded.maxWorkBytes == 10_000_000)
    }

    @Test func oneWriterAtATime() throws {
        let folder = try TemporaryFolder("lock")
        defer { folder.remove() }
        let path = folder.path + "/journal.sqlite"
        let first = try Journal(path: path)
        do {
            _ = try Journal(path: path)
            Issue.record("a second writer opened the journal")
        } catch let error as JournalError {
            #expect(error.message == "another ingest run is using the journal \(path); wait for it to finish")
        }
        // Readers (status, report) are welcome meanwhile.
        #expect(try Journal(path: path, writer: false, create: false).counts().isEmpty)
        _ = first
    }

    /// `ingest status` beside a run closes its reader while the run may be writing a batch: the reader must not
    /// take the write lock on the way out (it did, with an empty commit and a checkpoint, and could hold up the run).
    @Test func aReaderClosesWithoutTakingTheWriteLock() throws {
        let folder = try TemporaryFolder("reader")
        defer { folder.remove() }
        let path = folder.path + "/journal.sqlite"
        let writer = try Journal(path: path)
        let other = try Database(path: path, create: false)
        other.setBusyTimeout(milliseconds: 100)
        try other.execute("BEGIN IMMEDIATE")  // the run, in the middle of writing a batch
        let reader = try Journal(path: path, writer: false, create: false)
        #expect(try reader.counts().isEmpty)
        #expect(throws: Never.self) { try reader.close() }
        try other.execute("COMMIT")
        _ = writer
    }

    @Test func maxWorkBytesFailsAFileThatCanNeverFit() throws {
        let folder = try TemporaryFolder("budget")
        defer { folder.remove() }
        try folder.file("media/small.jpg", String(repeating: "x", count: 10))
        try folder.file("media/big.jpg", String(repeating: "x", count: 5000))
        let pipeline = try pipeline("max_work_bytes: 1KiB\nconcurrency: 2\nstages:\n  - jpeg: {}\n")
        let reports = try run(pipeline, folder)
        let big = try #require(reports["big.jpg"])
        #expect(big.status == .failed)
        #expect(big.failures.first?.rule == "max_work_bytes")
        #expect(big.failures.first?.message.hasPrefix("needs about 4.9 KiB of work space") == true)
        // The small one got its turn (and failed as a photo, which it is not).
        #expect(reports["small.jpg"]?.failures.first?.stage == "jpeg")
    }
}

/// `ingest run`, `status` and `report` as a user types them.
@Suite struct JournalCLITests {
    let ingest = TestPaths.ingest

    @Test func statusAndReportRebuildFromTheJournal() throws {
        let folder = try TemporaryFolder("journal-cli")
        defer { folder.remove() }
        try folder.file("media/a.txt", "a")
        try folder.file("media/b.txt", "b")
        try folder.file("media/c.bin", "c")
        let pipeline = try folder.file(
            "p.yml", "version: 1\nname: cli-journal\nstages:\n  - validate: { extensions: [txt], sniff: false }\n")
        let first = try runCommand(
            ingest, ["run", pipeline, "media", "-q", "--report", "first.jsonl"], directory: folder.path)
        #expect(first.status == 1)
        #expect(FileManager.default.fileExists(atPath: folder.path + "/.ingest/journal.sqlite"))

        let second = try runCommand(ingest, ["run", pipeline, "media"], directory: folder.path)
        #expect(second.status == 1)
        #expect(second.stdout.contains("skip  media/a.txt  already done (journal)\n"))
        #expect(second.stdout.hasSuffix("0 passed, 1 failed, 2 skipped\n"))

        let status = try runCommand(ingest, ["status"], directory: folder.path)
        #expect(status.status == 1)
        #expect(status.stdout.contains("journal .ingest/journal.sqlite (pipeline cli-journal)\n"))
        #expect(status.stdout.contains("       2  done\n"))
        #expect(status.stdout.contains("       1  failed\n"))
        #expect(status.stdout.contains("FAIL  media/c.bin\n      validate.extensions: extension .bin is not allowed\n"))

        // The report rebuilt from the journal is the first run's report, line for line.
        let rebuilt = try runCommand(ingest, ["report", "--output", "rebuilt.jsonl"], directory: folder.path)
        #expect(rebuilt.status == 1)
        let original = try String(contentsOfFile: folder.path + "/first.jsonl", encoding: .utf8)
        // Timings are the run's own (the journal keeps no clock), so they are left out of the comparison.
        let withoutTimings = { (text: String) in
            text.split(separator: "\n").map { line -> String in
                guard var object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                    return String(line)
                }
                object["timings"] = nil
                let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
                return String(decoding: data ?? Data(), as: UTF8.self)
            }
        }
        let rebuiltText = try String(contentsOfFile: folder.path + "/rebuilt.jsonl", encoding: .utf8)
        #expect(withoutTimings(rebuiltText) == withoutTimings(original))
        #expect(original.contains("\"timings\""))
        let junit = try runCommand(ingest, ["report", "--format", "junit"], directory: folder.path)
        #expect(junit.stdout.contains("<testsuite name=\"cli-journal\" tests=\"3\" failures=\"1\""))

        let forced = try runCommand(ingest, ["run", pipeline, "media", "--force"], directory: folder.path)
        #expect(forced.stdout.hasSuffix("2 passed, 1 failed, 0 skipped\n"))
        let unjournaled = try runCommand(
            ingest, ["run", pipeline, "media", "--no-journal", "--work-dir", "w2/work"], directory: folder.path)
        #expect(unjournaled.stdout.hasSuffix("2 passed, 1 failed, 0 skipped\n"))
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/w2/journal.sqlite"))

        let elsewhere = try runCommand(
            ingest, ["run", pipeline, "media", "--journal", "j/x.sqlite"], directory: folder.path)
        #expect(elsewhere.stdout.hasSuffix("2 passed, 1 failed, 0 skipped\n"))
        #expect(
            try runCommand(ingest, ["status", "--journal", "j/x.sqlite"], directory: folder.path).stdout.contains(
                "2  done"))

        let bad = try runCommand(
            ingest, ["run", pipeline, "media", "--force", "--retry-failed"], directory: folder.path)
        #expect(bad.status == 2)
        let missing = try runCommand(ingest, ["status", "--journal", "nope.sqlite"], directory: folder.path)
        #expect(missing.status == 3)
        #expect(missing.stderr.contains("no journal at nope.sqlite"))
    }
}

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
            FileManager.default.fileExists(atPath: work + "/" + name, isDirectory: &isDirectory)
            return !isDirectory.boolValue && name != WorkFolder.marker
        }
    }

    func records(_ folder: TemporaryFolder) throws -> [String: JournalRecord] {
        let journal = try Journal(path: folder.path + "/.ingest/journal.sqlite", writer: false, create: false)
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
            #expect(record.sha256?.count == 64)
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
        let journal = try Journal(path: folder.path + "/j.sqlite", writer: false, create: false)
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
        let journal = try Journal(path: folder.path + "/.ingest/journal.sqlite", writer: false, create: false)
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
            // A bare read-only connection: a `Journal`, even a reader, commits and checkpoints as it closes.
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
