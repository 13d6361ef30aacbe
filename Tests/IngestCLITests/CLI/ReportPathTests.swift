import Foundation
import Testing

@testable import IngestCore
@testable import IngestTestSupport

/// Where `--report` and `ingest report --output` write (issue 12, section 6): `-` is standard output; a FIFO, a
/// character device and `/dev/fd/N` are written directly; a symlink is followed and its target replaced atomically
/// in the target's folder, the link left as it was.
@Suite(.serialized) struct ReportPathTests {
    let ingest = TestPaths.ingest

    /// A one-stage local pipeline and two small inputs under `in/`.
    func setUp(_ name: String) throws -> (TemporaryFolder, String) {
        let folder = try TemporaryFolder(name)
        _ = try folder.file("in/a.txt", "alpha")
        _ = try folder.file("in/b.txt", "beta")
        let pipeline = try folder.file(
            "pipeline.yml", "version: 1\nname: paths\nstages:\n  - validate: { max_bytes: 1MB }\n")
        return (folder, pipeline)
    }

    func validate(_ pipeline: String, _ extra: [String], in folder: TemporaryFolder) throws -> CommandResult {
        try runCommand(ingest, ["validate", pipeline, "in"] + extra, directory: folder.path)
    }

    /// The report lines' paths, from JSON Lines text.
    func reportedPaths(_ text: String) -> [String] {
        text.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["path"] as? String
        }
    }

    func fileType(_ path: String) -> mode_t {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & S_IFMT : 0
    }

    @Test func dashIsStandardOutputForRunAndReport() throws {
        let (folder, pipeline) = try setUp("report-dash")
        defer { folder.remove() }
        let validated = try validate(pipeline, ["--report", "-", "--report-format", "jsonl"], in: folder)
        #expect(validated.status == 0, "\(validated.stderr)")
        #expect(reportedPaths(validated.stdout) == ["in/a.txt", "in/b.txt"], "\(validated.stdout)")
        #expect(!validated.stdout.contains("ok  "), "the table is not mixed into the report on standard output")
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/-"))
        // Standard output by its descriptor's name: the same (never a file made in /proc/self/fd).
        let byName = try validate(pipeline, ["--report", "/dev/fd/1", "--report-format", "jsonl"], in: folder)
        #expect(byName.status == 0, "\(byName.stderr)")
        #expect(reportedPaths(byName.stdout) == ["in/a.txt", "in/b.txt"], "\(byName.stdout)")
        #expect(!byName.stdout.contains("ok  "), "the table is not mixed into the report on standard output")

        let ran = try runCommand(ingest, ["run", pipeline, "in", "-q"], directory: folder.path)
        #expect(ran.status == 0, "\(ran.stderr)")
        let reported = try runCommand(
            ingest, ["report", "--output", "-", "--format", "jsonl"], directory: folder.path)
        #expect(reported.status == 0, "\(reported.stderr)")
        #expect(reportedPaths(reported.stdout).count == 2, "\(reported.stdout)")
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/-"))
    }

    @Test func fifoIsWrittenDirectly() throws {
        let (folder, pipeline) = try setUp("report-fifo")
        defer { folder.remove() }
        let fifo = folder.path + "/live.jsonl"
        #expect(mkfifo(fifo, 0o600) == 0)
        // A reader on another thread, as `ingest … --report live.jsonl & cat live.jsonl` would have.
        let reader = FIFOReader(path: fifo)
        let result = try validate(pipeline, ["--report", fifo, "-q"], in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        let text = reader.finish()
        #expect(reportedPaths(text) == ["in/a.txt", "in/b.txt"], "read from the FIFO: \(text)")
        #expect(fileType(fifo) == S_IFIFO, "the FIFO is still a FIFO")
    }

    @Test func characterDeviceAndDevFdAreWrittenDirectly() throws {
        let (folder, pipeline) = try setUp("report-device")
        defer { folder.remove() }
        // As root, a null device of our own (mknod), so a bug that renamed over the device could never replace the
        // system's /dev/null. As a user, mknod is refused, and /dev/null itself is safe: a user cannot rename over it,
        // so a report written by rename instead of directly fails the run.
        var device = folder.path + "/null.jsonl"
        let nullDevice = dev_t(1 << 8 | 3)  // makedev(1, 3), as /dev/null
        if geteuid() != 0 {
            device = "/dev/null"
        } else {
            try #require(mknod(device, S_IFCHR | 0o600, nullDevice) == 0, "mknod as root: \(errno)")
        }
        let toDevice = try validate(pipeline, ["--report", device, "-q"], in: folder)
        #expect(toDevice.status == 0, "\(toDevice.stderr)")
        #expect(fileType(device) == S_IFCHR, "the device is still a device")

        // `--report /dev/fd/3` with fd 3 a pipe into `cat` (what `--report >(cat)` hands over).
        let script = #""$0" validate "$1" in --report /dev/fd/3 --report-format jsonl -q 3>&1 >/dev/null | cat > piped"#
        let piped = try runCommand("/bin/bash", ["-c", script, ingest, pipeline], directory: folder.path)
        #expect(piped.status == 0, "\(piped.stderr)")
        let text = (try? String(contentsOfFile: folder.path + "/piped", encoding: .utf8)) ?? ""
        #expect(reportedPaths(text) == ["in/a.txt", "in/b.txt"], "through the pipe: \(text) \(piped.stderr)")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix(".") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    @Test func symlinkIsFollowedAndItsTargetReplaced() throws {
        let (folder, pipeline) = try setUp("report-symlink")
        defer { folder.remove() }
        let targets = folder.path + "/targets"
        try FileManager.default.createDirectory(atPath: targets, withIntermediateDirectories: true)
        _ = try folder.file("targets/a.jsonl", "old\n")
        let link = folder.path + "/latest.jsonl"
        #expect(symlink("targets/a.jsonl", link) == 0)

        let first = try validate(pipeline, ["--report", link, "-q"], in: folder)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(fileType(link) == S_IFLNK, "the link is still a link")
        let a = (try? String(contentsOfFile: targets + "/a.jsonl", encoding: .utf8)) ?? ""
        #expect(reportedPaths(a) == ["in/a.txt", "in/b.txt"], "written through the link: \(a)")
        let mode = try FileManager.default.attributesOfItem(atPath: targets + "/a.jsonl")[.posixPermissions] as? Int
        #expect(mode == 0o600)

        // The link now points at a file that does not exist yet, through a second link: created there.
        unlink(link)
        #expect(symlink(targets + "/hop.jsonl", link) == 0)
        #expect(symlink("b.jsonl", targets + "/hop.jsonl") == 0)
        let ran = try runCommand(ingest, ["run", pipeline, "in", "-q", "--report", link], directory: folder.path)
        #expect(ran.status == 0, "\(ran.stderr)")
        #expect(fileType(link) == S_IFLNK && fileType(targets + "/hop.jsonl") == S_IFLNK)
        let b = (try? String(contentsOfFile: targets + "/b.jsonl", encoding: .utf8)) ?? ""
        #expect(reportedPaths(b) == ["in/a.txt", "in/b.txt"], "written at the new target: \(b)")
        #expect(try String(contentsOfFile: targets + "/a.jsonl", encoding: .utf8) == a, "the old target is left alone")
        // `ingest report --output` goes through the same links.
        unlink(targets + "/b.jsonl")
        let reported = try runCommand(ingest, ["report", "--output", link], directory: folder.path)
        #expect(reported.status == 0, "\(reported.stderr)")
        #expect(fileType(link) == S_IFLNK && fileType(targets + "/hop.jsonl") == S_IFLNK)
        let again = (try? String(contentsOfFile: targets + "/b.jsonl", encoding: .utf8)) ?? ""
        #expect(reportedPaths(again) == ["in/a.txt", "in/b.txt"], "ingest report through the links: \(again)")
        let stray =
            try FileManager.default.contentsOfDirectory(atPath: targets).filter { $0.hasPrefix(".") }
            + FileManager.default.contentsOfDirectory(atPath: folder.path).filter {
                $0.hasPrefix(".") && $0 != ".ingest"
            }
        #expect(stray.isEmpty, "no temp file left: \(stray)")
    }
}

/// Reads a FIFO to its end on a thread of its own. The FIFO is opened read-write first (which never blocks and
/// keeps a reader present), so neither the writer nor this test can hang when the writer never comes.
final class FIFOReader: @unchecked Sendable {
    private let descriptor: Int32
    private var bytes = Data()
    private let done = DispatchSemaphore(value: 0)
    private let lock = NSLock()

    init(path: String) {
        descriptor = open(path, O_RDWR | O_NONBLOCK)
        Thread.detachNewThread { [self] in
            var buffer = [UInt8](repeating: 0, count: 65536)
            var idle = 0
            while idle < 40 {  // up to ~2 s without bytes after the writer is done
                let got = read(descriptor, &buffer, buffer.count)
                if got > 0 {
                    lock.withLock { bytes.append(contentsOf: buffer[..<got]) }
                    idle = 0
                } else if lock.withLock({ finished }) {
                    idle += 1
                    usleep(50_000)
                } else {
                    usleep(20_000)
                }
            }
            done.signal()
        }
    }

    private var finished = false

    /// Call once the writer has exited: drains what is left and returns everything read.
    func finish() -> String {
        lock.withLock { finished = true }
        done.wait()
        close(descriptor)
        return String(decoding: lock.withLock { bytes }, as: UTF8.self)
    }
}
