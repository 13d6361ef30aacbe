import Foundation
import NativeSystem
import Synchronization
import Testing

@testable import Ingest
@testable import IngestJournal

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 29 §7: a journal let go is free at once, even while other threads of the process start children (the
/// cause of `JournalTests`' rare "another ingest run is using the journal" under load), and a run started while the
/// last one is still exiting waits a few seconds for its lock instead of refusing at once.
@Suite struct JournalLockExitTests {
    /// Threads starting `/bin/true` one after another, as the other tests of a test process start `ingest`, ffmpeg
    /// or a server: each child holds a copy of every descriptor of this process from its fork to its `exec`.
    final class Spawner: Sendable {
        private let stopped = Atomic(false)
        let started = Atomic(0)
        private let threads: Int
        /// Signalled by each thread as it ends.
        private let ended = DispatchSemaphore(value: 0)

        init(threads: Int) {
            self.threads = threads
            for _ in 0..<threads {
                Thread { [self] in
                    while !stopped.load(ordering: .sequentiallyConsistent) {
                        let child = Process()
                        child.executableURL = URL(fileURLWithPath: "/bin/true")
                        if (try? child.run()) != nil { child.waitUntilExit() }
                        started.add(1, ordering: .sequentiallyConsistent)
                    }
                    ended.signal()
                }.start()
            }
        }

        func stop() {
            stopped.store(true, ordering: .sequentiallyConsistent)
            for _ in 0..<threads { ended.wait() }
        }
    }

    /// Before the fix a lock was let go by closing its descriptor only, and a child being started kept it held:
    /// thousands of the relocks below were refused.
    @Test func aLockLetGoIsFreeAtOnceWhileOtherThreadsStartProcesses() throws {
        let folder = try TemporaryFolder("lock-spawn")
        defer { folder.remove() }
        let spawner = Spawner(threads: 2)
        defer { spawner.stop() }
        var locks = 0
        var refused = 0
        // At least 200 children started during the relocks, however fast or slow the machine.
        while locks < 2_000 || spawner.started.load(ordering: .sequentiallyConsistent) < 200 {
            do {
                _ = try FileLock(path: folder.path + "/x.lock")
            } catch {
                refused += 1
            }
            locks += 1
        }
        #expect(refused == 0, "\(refused) of \(locks) relocks refused")
        // The journal itself, as JournalTests opens and closes it run after run.
        let path = folder.path + "/journal.sqlite"
        var errors: [String] = []
        for _ in 0..<100 {
            do {
                try SQLiteJournal(path: path).close()
            } catch {
                errors.append("\(error)")
            }
        }
        #expect(errors.isEmpty, "\(errors.count) of 100 opens refused: \(errors.first ?? "")")
    }

    enum Holder: String, CaseIterable, CustomTestStringConvertible {
        /// Killed, and still exiting (held at the start of its exit by the fixture).
        case killed
        /// Exited, while a child it forked keeps the locked descriptor.
        case gone
        var testDescription: String { rawValue }
    }

    @Test(arguments: Holder.allCases) func aRunStartedWhileTheLastOneIsExitingWaitsForItsLock(_ holder: Holder) throws {
        let folder = try TemporaryFolder("lock-exiting")
        defer { folder.remove() }
        try folder.file("media/a.txt", "a")
        let pipeline = try folder.file(
            "p.yml", "version: 1\nname: lock\nstages:\n  - validate: { extensions: [txt], sniff: false }\n")
        let journal = folder.path + "/state/journal.sqlite"
        try FileManager.default.createDirectory(atPath: folder.path + "/state", withIntermediateDirectories: true)
        let fixture = try FixtureProcess(
            "exiting_lock_holder.py", [holder.rawValue, journal + ".lock"], portFile: folder.path + "/holder.pid",
            attempts: 1_500, failure: "exiting_lock_holder.py did not hold the lock (ptrace refused?)")
        defer { fixture.stop() }
        let errors = folder.path + "/stderr.txt"
        _ = FileManager.default.createFile(atPath: errors, contents: nil)
        let run = Process()
        run.executableURL = URL(fileURLWithPath: TestPaths.ingest)
        run.arguments = ["run", pipeline, "media", "-q", "--journal", journal, "--report", folder.path + "/r.jsonl"]
        run.currentDirectoryURL = URL(fileURLWithPath: folder.path)
        run.environment = environmentWithoutProxies()
        run.standardOutput = FileHandle.nullDevice
        run.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errors))
        try run.run()
        let waiting =
            "ingest: the journal \(journal) is still locked by pid \(fixture.ports[0]), which "
            + (holder == .killed ? "is exiting" : "has exited")
        var said = false
        for _ in 0..<1_500 where run.isRunning {
            said = ((try? String(contentsOfFile: errors, encoding: .utf8)) ?? "").contains(waiting)
            if said { break }
            usleep(20_000)
        }
        // The holder finishes exiting: the run takes the journal and goes on.
        fixture.stop()
        run.waitUntilExit()
        let stderr = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
        #expect(said, "\(stderr)")
        #expect(stderr.contains("waiting up to 5 s for it to let go"), "\(stderr)")
        #expect(run.terminationStatus == 0, "\(stderr)")
        #expect(reportObjects(folder.path + "/r.jsonl").first?["status"] as? String == "passed")
    }

    /// A live run's lock is refused at once, without waiting.
    @Test func aLiveRunsLockIsRefusedAtOnce() throws {
        let folder = try TemporaryFolder("lock-live")
        defer { folder.remove() }
        try folder.file("media/a.txt", "a")
        let pipeline = try folder.file(
            "p.yml", "version: 1\nname: lock\nstages:\n  - validate: { extensions: [txt], sniff: false }\n")
        let path = folder.path + "/journal.sqlite"
        let held = try SQLiteJournal(path: path)
        let run = try runCommand(
            TestPaths.ingest, ["run", pipeline, "media", "-q", "--journal", path], directory: folder.path)
        #expect(run.status == 3, "\(run.stderr)")
        #expect(run.stderr.contains("another ingest run is using the journal \(path); wait for it to finish"))
        #expect(!run.stderr.contains("waiting"), "\(run.stderr)")
        try held.close()
    }
}
