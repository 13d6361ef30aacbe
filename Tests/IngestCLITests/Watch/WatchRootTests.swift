import Foundation
import Testing

@testable import IngestCheck
@testable import IngestCore
@testable import IngestTestSupport

/// Issue 29 §2: the watched folder itself goes away and comes back — removed and made again (a backup job,
/// `rsync --delete-after`), a symlink pointed elsewhere, a mount point unmounted and mounted again. The watcher says
/// so on standard error and in `/healthz`, looks for the folder again, and watches and scans it once it is back,
/// without sending files already done again.
@Suite(.serialized) struct WatchRootTests {
    /// A watch on `in` (with metrics on a free port), once the file already there (`first.m4a`) is taken.
    func started(_ folder: TemporaryFolder, _ arguments: [String] = []) throws -> WatchProcess {
        try sample("voice.m4a").write(to: URL(fileURLWithPath: folder.path + "/in/first.m4a"))
        let pipeline = try folder.file("p.yml", watchPipeline())
        let watch = try WatchProcess(
            folder: folder.path, pipeline: pipeline, ["--settle", "0.3s", "--metrics-addr", "127.0.0.1:0"] + arguments)
        try #require(watch.waitForReports("first.m4a"), "the file already there was never taken: \(watch.stderr)")
        return watch
    }

    /// `/healthz`'s status and body (status 0: no answer).
    func health(_ watch: WatchProcess) throws -> (status: Int, body: String) {
        let address = watch.stderr.split(separator: "metrics at http://").last?.split(separator: "/").first
        return try MetricsTests.get("http://\(address.map(String.init) ?? "none")/healthz")
    }

    func passed(_ watch: WatchProcess, _ relative: String) -> Int {
        watch.reports(relative).filter { $0["status"] as? String == "passed" }.count
    }

    @Test func aWatchedFolderRemovedAndMadeAgainAtOnceIsWatchedAgain() throws {
        let folder = try TemporaryFolder("watch-root-again")
        defer { folder.remove() }
        try FileManager.default.createDirectory(atPath: folder.path + "/in", withIntermediateDirectories: true)
        let watch = try started(folder)
        // rm -rf in; mkdir in; cp … in/ — in one go, as a backup job does; the file already done comes back too.
        try FileManager.default.removeItem(atPath: folder.path + "/in")
        try FileManager.default.createDirectory(atPath: folder.path + "/in", withIntermediateDirectories: false)
        try sample("voice.m4a").write(to: URL(fileURLWithPath: folder.path + "/in/first.m4a"))
        try sample("plain.mov").write(to: URL(fileURLWithPath: folder.path + "/in/a.mov"))
        #expect(watch.waitForReports("a.mov"), "\(watch.stderr)")
        #expect(watch.waitForReports("first.m4a", count: 2), "\(watch.stderr)")
        #expect(watch.stop() == 143, "\(watch.stderr)")
        #expect(watch.stderr.contains("in: the watched folder is gone (deleted)"), "\(watch.stderr)")
        #expect(watch.stderr.contains("in: the watched folder is back"), "\(watch.stderr)")
        #expect(passed(watch, "a.mov") == 1)
        #expect(passed(watch, "first.m4a") == 1, "sent again: \(watch.reports("first.m4a"))")
    }

    @Test func healthzSaysAMissingFolderUntilItIsBack() throws {
        let folder = try TemporaryFolder("watch-root-health")
        defer { folder.remove() }
        try FileManager.default.createDirectory(atPath: folder.path + "/in/sub", withIntermediateDirectories: true)
        let watch = try started(folder)
        #expect(try health(watch).status == 200)
        try FileManager.default.removeItem(atPath: folder.path + "/in")
        #expect(try watch.eventually { try health(watch).status == 503 }, "\(watch.stderr)")
        let missing = try health(watch)
        #expect(missing.body.contains("watched folder missing: in (deleted)"), "\(missing.body)")
        // Made again, later than the first look: found by the looks every few seconds.
        try FileManager.default.createDirectory(atPath: folder.path + "/in/sub", withIntermediateDirectories: true)
        try sample("plain.mov").write(to: URL(fileURLWithPath: folder.path + "/in/sub/b.mov"))
        #expect(watch.waitForReports("sub/b.mov"), "\(watch.stderr)")
        #expect(try watch.eventually { try health(watch).status == 200 }, "\(watch.stderr)")
        // Its subfolder is watched too.
        try sample("plain.mov").write(to: URL(fileURLWithPath: folder.path + "/in/sub/c.mov"))
        #expect(watch.waitForReports("sub/c.mov"), "\(watch.stderr)")
        #expect(watch.stop() == 143, "\(watch.stderr)")
        #expect(watch.stderr.contains("looking for it every 2 s"), "\(watch.stderr)")
    }

    /// `in` is a symlink to `a`, then (atomically, as a deploy does) to `b`, a folder filled before the watch began.
    @Test(arguments: [[], ["--poll", "0.2s"]])
    func aRootSymlinkPointedAtAnotherFolderIsWatchedThere(arguments: [String]) throws {
        let folder = try TemporaryFolder("watch-root-link")
        defer { folder.remove() }
        for name in ["a", "b"] {
            try FileManager.default.createDirectory(atPath: folder.path + "/" + name, withIntermediateDirectories: true)
        }
        try sample("plain.mov").write(to: URL(fileURLWithPath: folder.path + "/b/old.mov"))
        try FileManager.default.createSymbolicLink(atPath: folder.path + "/in", withDestinationPath: "a")
        let watch = try started(folder, arguments)
        try FileManager.default.createSymbolicLink(atPath: folder.path + "/in.new", withDestinationPath: "b")
        #expect(rename(folder.path + "/in.new", folder.path + "/in") == 0)
        #expect(watch.eventually { watch.stderr.contains("in: now leads to another folder") }, "\(watch.stderr)")
        #expect(watch.waitForReports("old.mov"), "\(watch.stderr)")
        try sample("voice.m4a").write(to: URL(fileURLWithPath: folder.path + "/b/new.m4a"))
        #expect(watch.waitForReports("new.m4a"), "\(watch.stderr)")
        // The folder no longer watched: what lands there is not taken.
        try sample("voice.m4a").write(to: URL(fileURLWithPath: folder.path + "/a/stale.m4a"))
        try sample("voice.m4a").write(to: URL(fileURLWithPath: folder.path + "/b/last.m4a"))
        #expect(watch.waitForReports("last.m4a"), "\(watch.stderr)")
        #expect(watch.stop() == 143, "\(watch.stderr)")
        #expect(watch.reports("stale.m4a").isEmpty)
    }

    /// A tmpfs mounted at `in` is unmounted (the empty folder under it shows: not the folder watched) and mounted
    /// again with a file in it.
    @Test(.enabled(if: Tmpfs.available, "mounting a tmpfs needs root"))
    func aRemountedRootIsWatchedAgain() throws {
        let folder = try TemporaryFolder("watch-root-mount")
        defer { folder.remove() }
        let mountPoint = folder.path + "/in"
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        func mount() throws -> Bool {
            try runCommand("/bin/mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", mountPoint]).status == 0
        }
        try #require(try mount())
        defer { _ = try? runCommand("/bin/umount", ["-l", mountPoint]) }
        let watch = try started(folder)
        #expect(try runCommand("/bin/umount", [mountPoint]).status == 0)
        #expect(try watch.eventually { try health(watch).status == 503 }, "\(watch.stderr)")
        #expect(
            watch.stderr.contains("in: the watched folder is gone (its file system was unmounted)"), "\(watch.stderr)")
        try #require(try mount())
        try sample("plain.mov").write(to: URL(fileURLWithPath: mountPoint + "/after.mov"))
        #expect(watch.waitForReports("after.mov"), "\(watch.stderr)")
        #expect(try watch.eventually { try health(watch).status == 200 }, "\(watch.stderr)")
        #expect(watch.stop() == 143, "\(watch.stderr)")
        #expect(watch.stderr.contains("in: the watched folder is back"), "\(watch.stderr)")
    }
}
