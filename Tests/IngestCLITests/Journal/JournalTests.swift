import Foundation
import NativeSQLite
import Testing

@testable import IngestConfig
@testable import IngestCore
@testable import IngestFiles
@testable import IngestJournal
@testable import IngestRun
@testable import IngestTestSupport

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
        let journal = try SQLiteJournal(path: folder.path + "/.ingest/journal.sqlite")
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
        let journal = try SQLiteJournal(path: path)
        let start = JournalStart(
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
        #expect(try SQLiteJournal(path: path, writer: false, create: false).counts() == [.done: 1])
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
        let firstDate = try SQLiteJournal(path: folder.path + "/.ingest/journal.sqlite", writer: false, create: false)
            .record(root: JournalRecord.canonicalRoot(folder.path + "/media"), relativePath: "b.txt")?.templateValues[
                "date"]

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

        let journal = try SQLiteJournal(path: folder.path + "/.ingest/journal.sqlite", writer: false, create: false)
        let record = try #require(
            try journal.record(root: JournalRecord.canonicalRoot(folder.path + "/media"), relativePath: "b.txt"))
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
        let first = try SQLiteJournal(path: path)
        do {
            _ = try SQLiteJournal(path: path)
            Issue.record("a second writer opened the journal")
        } catch let error as JournalError {
            #expect(error.message == "another ingest run is using the journal \(path); wait for it to finish")
        }
        // Readers (status, report) are welcome meanwhile.
        #expect(try SQLiteJournal(path: path, writer: false, create: false).counts().isEmpty)
        _ = first
    }

    /// `ingest status` beside a run closes its reader while the run may be writing a batch: the reader must not
    /// take the write lock on the way out (it did, with an empty commit and a checkpoint, and could hold up the run).
    @Test func aReaderClosesWithoutTakingTheWriteLock() throws {
        let folder = try TemporaryFolder("reader")
        defer { folder.remove() }
        let path = folder.path + "/journal.sqlite"
        let writer = try SQLiteJournal(path: path)
        let other = try Database(path: path, create: false)
        other.setBusyTimeout(milliseconds: 100)
        try other.execute("BEGIN IMMEDIATE")  // the run, in the middle of writing a batch
        let reader = try SQLiteJournal(path: path, writer: false, create: false)
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
        #expect(big.failures.first?.rule.rawValue == "max_work_bytes")
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
