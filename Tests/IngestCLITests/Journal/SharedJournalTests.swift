import Foundation
import NativePostgres
import Testing

@testable import IngestConfig
@testable import IngestCore
@testable import IngestJournal
@testable import IngestRun
@testable import IngestTestSupport
@testable import IngestJournalTestSupport

/// `--shard I/N`: a stable hash of the relative path splits a tree into N parts that partition it exactly, with the
/// journal, without it, and for `ingest validate`.
@Suite struct ShardTests {
    let ingest = TestPaths.ingest

    @Test func theShardsPartitionEveryTree() throws {
        // FNV-1a 64 of known inputs (the reference vectors), so the split never changes between versions.
        #expect(Shard.hash("") == 0xcbf2_9ce4_8422_2325)
        #expect(Shard.hash("a") == 0xaf63_dc4c_8601_ec8c)
        #expect(Shard.hash("foobar") == 0x8594_4171_f739_67e8)
        let paths = (0..<2_000).map { "d\($0 % 37)/IMG_\(String(format: "%04d", $0)).MOV" } + ["é/ü.jpg", "a b.mov"]
        for count in 1...7 {
            let shards = try (0..<count).map { try Shard(index: $0, count: count) }
            var sizes = Array(repeating: 0, count: count)
            for path in paths {
                let owners = shards.filter { $0.contains(relativePath: path) }
                #expect(owners.count == 1, "\(path) is in \(owners.count) of \(count) shards")
                sizes[owners.first?.index ?? 0] += 1
            }
            // Roughly even: no shard is empty or holds twice its share.
            #expect(sizes.allSatisfy { $0 > 0 && $0 < 2 * paths.count / count + 10 }, "sizes \(sizes)")
        }
        #expect(try Shard(parsing: "2/5") == Shard(index: 2, count: 5))
        for bad in ["5/5", "-1/3", "1/0", "x", "1/", "/3", "1/2/3", " 1/2"] {
            #expect(throws: ShardError.self, "\(bad)") { try Shard(parsing: bad) }
        }
    }

    /// The reports of `--shard 0/3`, `1/3`, `2/3` together name every file once, whatever the journal.
    @Test(arguments: [["validate"], ["run", "--no-journal"], ["run"]])
    func threeShardRunsCoverTheTreeOnce(command: [String]) throws {
        let folder = try TemporaryFolder("shard")
        defer { folder.remove() }
        var all: Set<String> = []
        for index in 0..<40 {
            let name = "media/d\(index % 3)/f\(index).\(index % 7 == 0 ? "bin" : "txt")"
            try folder.file(name, "file \(index)")
            all.insert(name)
        }
        let pipeline = try folder.file(
            "p.yml", "version: 1\nname: shards\nstages:\n  - validate: { extensions: [txt], sniff: false }\n")
        var seen: [String] = []
        for index in 0..<3 {
            let result = try runCommand(
                ingest,
                command + [pipeline, "media", "--shard", "\(index)/3", "-q", "--report", "s\(index).jsonl"]
                    + (command.count == 1 && command[0] == "run" ? ["--journal", "j\(index).sqlite"] : []),
                directory: folder.path)
            #expect(result.status == 1, "shard \(index): \(result.stderr)")
            let lines = try String(contentsOfFile: folder.path + "/s\(index).jsonl", encoding: .utf8)
                .split(separator: "\n")
            #expect(!lines.isEmpty)
            for line in lines {
                let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                seen.append(try #require(object["path"] as? String))
            }
        }
        #expect(seen.count == all.count)
        #expect(Set(seen) == all)
    }

    @Test func badShardValuesAreUsageErrors() throws {
        let folder = try TemporaryFolder("shard-bad")
        defer { folder.remove() }
        let pipeline = try folder.file("p.yml", "version: 1\nname: s\nstages:\n  - validate: {}\n")
        for (value, message) in [
            ("3/3", "the shard index must be from 0 to 2 for 3 shards (found 3)"),
            ("1/0", "the shard count must be at least 1 (found 0)"),
            ("half", "--shard takes INDEX/COUNT, e.g. 0/4 (found 'half')"),
        ] {
            for command in ["run", "validate"] {
                let result = try runCommand(
                    ingest, [command, pipeline, "--shard", value, "--work-dir", "w/work"], directory: folder.path)
                #expect(result.status == 2, "\(command) --shard \(value)")
                #expect(result.stderr.contains(message), "\(result.stderr)")
            }
        }
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/w"))
    }
}

/// The journal in PostgreSQL (Debian's server, started by the test process): the same resume behaviour as SQLite,
/// leases that hand each file to one worker and pass to another when a worker stops, and a password that never
/// shows. Without the server's binaries those tests are skipped, and shown so (CI installs them).
@Suite(.serialized) struct PostgresJournalTests {
    let ingest = TestPaths.ingest

    /// The server (the tests that use it are enabled only where PostgreSQL is installed: `.postgres`).
    func server() throws -> PostgresServer { try PostgresServer.shared() }

    func pipeline(_ yaml: String) throws -> Pipeline {
        try Pipeline.parse(yaml: "version: 1\nname: pg-test\n" + yaml, source: "test.yml", environment: [:])
    }

    @Test func theURLPasswordIsRedacted() throws {
        let cases = [
            ("postgres://me:p%40ss@db.example:5432/ingest", "postgres://me:REDACTED@db.example:5432/ingest", "p@ss"),
            (
                "postgresql://me@host/db?password=hunter22&sslmode=require",
                "postgresql://me@host/db?password=REDACTED&sslmode=require", "hunter22"
            ),
            ("postgres://host/db", "postgres://host/db", nil),
        ]
        for (url, display, password) in cases {
            let redacted = PostgresJournal.redact(url)
            #expect(redacted.display == display)
            #expect(redacted.password == password)
        }
    }

    @Test(.postgres) func aWrongDatabaseIsNamedWithoutThePassword() throws {
        let server = try server()
        // A wrong database: libpq's message is kept, the password is not shown.
        let url = server.url(database: "no_such_database")
        do {
            _ = try PostgresJournal(url: url)
            Issue.record("a missing database opened")
        } catch let error as JournalError {
            #expect(error.message.contains("no_such_database\" does not exist"), "\(error.message)")
            #expect(error.message.hasPrefix("journal postgres://ingest:REDACTED@127.0.0.1:"))
            #expect(!error.message.contains(server.password))
        }
        let cli = try runCommand(ingest, ["status", "--journal", url])
        #expect(cli.status == 3)
        #expect(cli.stderr.contains("REDACTED") && !cli.stderr.contains(server.password), "\(cli.stderr)")
    }

    @Test(.postgres) func aSecondRunSkipsWhatTheFirstFinished() throws {
        let server = try server()
        let url = try server.createDatabase()
        let folder = try TemporaryFolder("pg-resume")
        defer { folder.remove() }
        for name in ["a.txt", "b.txt", "sub/c.txt", "bad.bin"] { try folder.file("media/" + name, "hello " + name) }
        let pipeline = try folder.file(
            "p.yml", "version: 1\nname: pg\nstages:\n  - validate: { extensions: [txt], sniff: false }\n")
        let first = try runCommand(ingest, ["run", pipeline, "media", "--journal", url, "-q"], directory: folder.path)
        #expect(first.status == 1, "\(first.stderr)")
        let second = try runCommand(ingest, ["run", pipeline, "media", "--journal", url], directory: folder.path)
        #expect(second.stdout.contains("skip  media/a.txt  already done (journal)\n"), "\(second.stdout)")
        #expect(second.stdout.hasSuffix("0 passed, 1 failed, 3 skipped\n"))

        let status = try runCommand(ingest, ["status", "--journal", url], directory: folder.path)
        #expect(status.status == 1)
        #expect(status.stdout.contains("(pipeline pg)\n"))
        #expect(status.stdout.contains("       3  done\n"))
        #expect(
            status.stdout.contains("FAIL  media/bad.bin\n      validate.extensions: extension .bin is not allowed\n"))
        #expect(!status.stdout.contains(server.password))
        let report = try runCommand(ingest, ["report", "--journal", url, "--format", "jsonl"], directory: folder.path)
        #expect(report.stdout.split(separator: "\n").count == 4)

        let journal = try PostgresJournal(url: url, writer: false)
        let record = try #require(
            try journal.record(root: JournalRecord.canonicalRoot(folder.path + "/media"), relativePath: "sub/c.txt"))
        #expect(record.state == .done)
        #expect(record.attempts == 1)
        #expect(record.size == 15)
    }

    @Test(.postgres) func aLeaseIsExclusiveAndPassesOnWhenItsWorkerStops() throws {
        let server = try server()
        let url = try server.createDatabase()
        let stuck = try PostgresJournal(url: url, writer: true, leaseSeconds: 30, workLockPath: nil, renews: false)
        let other = try PostgresJournal(url: url, leaseSeconds: 30)
        #expect(try stuck.lease(root: "/r", relativePath: "x.mov") == .granted)
        #expect(try other.lease(root: "/r", relativePath: "x.mov") == .heldElsewhere(owner: stuck.owner))
        #expect(try other.lease(root: "/r", relativePath: "y.mov") == .granted)
        // A lease holds until its time is up; once a worker that stopped renewing is past it, another takes the file.
        let late = try PostgresJournal(url: url, leaseSeconds: 30)
        try stuck.ageLeases(by: 29)
        #expect(try late.lease(root: "/r", relativePath: "x.mov") == .heldElsewhere(owner: stuck.owner))
        try stuck.ageLeases(by: 2)
        #expect(try late.lease(root: "/r", relativePath: "x.mov") == .granted)
        #expect(try late.lease(root: "/r", relativePath: "y.mov") == .heldElsewhere(owner: other.owner))
        // Given back after its result is recorded: a worker that started before that skips it as handled.
        other.endLease(root: "/r", relativePath: "y.mov")
        #expect(try late.lease(root: "/r", relativePath: "y.mov") == .handledElsewhere(owner: other.owner))
        let next = try PostgresJournal(url: url, leaseSeconds: 30)
        #expect(try next.lease(root: "/r", relativePath: "y.mov") == .granted)
        try stuck.close()
        try other.close()
        try late.close()
        try next.close()
    }

    /// Two workers, two copies of one content, at the same moment: the first claim of the dedupe key stands while
    /// its worker holds the file's lease, though nothing of that file is journaled yet, so the second copy is a
    /// duplicate. A key given back (its file failed before anything was sent) is free at once; the key of a worker
    /// that stopped is free once its lease expired.
    @Test(.postgres) func aDedupeKeyClaimedOnOneWorkerHoldsOnAnother() throws {
        let server = try server()
        let url = try server.createDatabase()
        let first = try PostgresJournal(url: url, leaseSeconds: 30)
        let second = try PostgresJournal(url: url, leaseSeconds: 30)
        func claim(_ journal: PostgresJournal, _ key: String, _ name: String) throws -> String? {
            try journal.claim(key: key, root: "/r", relativePath: name, path: "r/" + name, excluding: nil)
        }
        #expect(try first.lease(root: "/r", relativePath: "a.m4a") == .granted)
        #expect(try second.lease(root: "/r", relativePath: "b.m4a") == .granted)
        #expect(try claim(first, "k", "a.m4a") == nil)
        #expect(try claim(second, "k", "b.m4a") == "r/a.m4a")
        first.release(key: "k")
        #expect(try claim(second, "k", "b.m4a") == nil)
        #expect(try claim(first, "k", "a.m4a") == "r/b.m4a")

        let stuck = try PostgresJournal(url: url, writer: true, leaseSeconds: 30, workLockPath: nil, renews: false)
        #expect(try stuck.lease(root: "/r", relativePath: "c.m4a") == .granted)
        #expect(try claim(stuck, "k2", "c.m4a") == nil)
        #expect(try claim(second, "k2", "b.m4a") == "r/c.m4a")
        try stuck.ageLeases(by: 31)  // its worker stopped renewing 31 s ago: the lease, and with it the claim, lapsed
        #expect(try claim(second, "k2", "b.m4a") == nil)
        #expect(try claim(first, "k2", "a.m4a") == "r/b.m4a")
        try stuck.close()
        try first.close()
        try second.close()
    }

    /// Three `ingest run` workers share one tree of 300 files through the fixture backend; one is `kill -9`ed
    /// mid-run. The other two finish the batch, taking over the killed worker's files once their leases expire:
    /// every file is stored once, every callback is delivered once, no ticket is asked for twice except those the
    /// killed worker had in flight, and no file was worked on by two live workers.
    @Test(.postgres) func threeWorkersOneKilledEveryFileDoneOnce() throws {
        let server = try server()
        let url = try server.createDatabase()
        // Each callback's answer is held a moment after the server acted on it, so the killed worker most likely
        // has one in that state (its repeat must be refused and count as done).
        let backend = try FixtureBackend(
            faults: #"""
                [{"method": "POST", "path": "/api/analyze-video", "action": "act_then_hang", "seconds": 0.1,
                  "times": 1000}]
                """#)
        defer { backend.stop() }
        let folder = try TemporaryFolder("pg-workers")
        defer { folder.remove() }
        let count = 300
        for index in 0..<count {
            try folder.file("in/user\(index % 5)/clip\(String(format: "%03d", index)).mov", "clip \(index)")
        }
        let pipeline = try folder.file("p.yml", UploadPipelineTests.hockeyPipeline(backend.base))
        func worker(_ number: Int) throws -> Process {
            let process = try startIngest(
                [
                    "run", pipeline, "in", "-q", "--journal", url, "--lease-seconds", "2", "--work-dir",
                    "w\(number)/work", "--report", "w\(number).jsonl",
                ], in: folder.path)
            return process
        }
        // A writer that leases nothing: it makes the tables, so the workers and this observer find them.
        let observer = try PostgresJournal(url: url)
        let workers = try (0..<3).map(worker)
        // Killed once a fair part of the batch is done: it holds leases on files in flight.
        try waitUntilDone(60, in: observer) { workers[0].isRunning }
        kill(workers[0].processIdentifier, SIGKILL)
        workers[0].waitUntilExit()
        // The files the killed worker held: the survivors must take them over once the leases expire.
        let database = try PostgresConnection(conninfo: url)
        let orphaned = Set(
            try database.execute(
                "SELECT relative_path FROM ingest_leases WHERE owner LIKE $1 AND expires_at IS NOT NULL",
                ["%:\(workers[0].processIdentifier):%"]
            ).compactMap { $0[0] }.map { "in/" + $0 })
        print("killed worker held \(orphaned.count) lease(s): \(orphaned.sorted())")
        for process in workers { process.waitUntilExit() }
        #expect(workers[1].terminationStatus == 0)
        #expect(workers[2].terminationStatus == 0)

        #expect(try observer.counts() == [.done: count])
        #expect(try backend.objects().count == count)
        // Only calls the killed worker had in flight (concurrency 2) can have been made twice: a ticket asked for
        // again is a new ticket (hence the range), a callback made again is refused by the server with 409, which
        // `on_conflict: done` counts as done, so every callback is delivered exactly once.
        let tickets = try backend.counts("tickets")["/api/upload-url"] ?? 0
        let callbacks = try backend.counts("callbacks")["/api/analyze-video"] ?? 0
        #expect((count...count + 2).contains(tickets), "tickets: \(tickets)")
        #expect(callbacks == count, "callbacks: \(callbacks)")
        var attempts = 0
        try observer.forEachRecord { attempts += $0.attempts }
        #expect((count...count + 2).contains(attempts), "attempts: \(attempts)")

        // The survivors' reports: each passed file once, and between them and the killed worker's
        // journaled files, the whole tree.
        var passed: [String] = []
        for number in 1...2 {
            let lines = try String(contentsOfFile: folder.path + "/w\(number).jsonl", encoding: .utf8)
                .split(separator: "\n")
            for line in lines {
                let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                let status = object["status"] as? String
                #expect(status == "passed" || status == "skipped", "\(line)")
                if status == "passed" { passed.append(try #require(object["path"] as? String)) }
            }
        }
        #expect(passed.count == Set(passed).count, "a file passed twice")
        #expect(passed.count < count, "the killed worker did nothing")
        #expect(orphaned.isSubset(of: Set(passed)), "not taken over: \(orphaned.subtracting(passed))")
        let live = try database.execute("SELECT COUNT(*) FROM ingest_leases WHERE expires_at IS NOT NULL")
        #expect(live.first?.first == "0", "leases still held: \(live)")
    }

    /// A ticket renewed by an upload replaces the journaled one before the upload starts, in PostgreSQL too.
    @Test(.postgres) func aRenewedTicketIsJournaledBeforeItsUpload() throws {
        let server = try server()
        let url = try server.createDatabase()
        // Opened once the run has made the tables.
        var observer: PostgresJournal?
        defer { try? observer?.close() }
        try JournalRenewedTicketTests.renewedTicketIsUsedAfterAKill(
            "pg-renew", journal: ["--journal", url, "--lease-seconds", "2"]
        ) { _ in
            if observer == nil { observer = try PostgresJournal(url: url, writer: false) }
            return try JournalRenewedTicketTests.stagesOfTheOnlyFile(observer!)
        }
    }
}
