import Foundation
import Testing

@testable import IngestConfig
@testable import IngestCore
@testable import IngestRun
@testable import IngestTestSupport

/// The walker lists lazily in a fixed order and turns bad entries into failures of their own; the runner keeps
/// going past bad files and hands reports back in input order.
@Suite struct InputWalkerTests {
    func walk(_ paths: [String], _ configure: (inout InputSpec) -> Void = { _ in }) -> [InputEntry] {
        var spec = InputSpec()
        configure(&spec)
        return Array(InputWalker(paths: paths, spec: spec))
    }

    @Test func globsAndOrder() throws {
        let folder = try TemporaryFolder("walk")
        defer { folder.remove() }
        for name in ["b/clip.mov", "a/IMG_0001.MOV", "a.mov", "notes.txt", ".hidden/x.mov", "a/.DS_Store", "c/d/e.mov"]
        {
            try folder.file(name)
        }
        let entries = walk([folder.path]) {
            $0.include = ["**/*.mov"]
            $0.exclude = ["**/.*"]
        }
        #expect(entries.map(\.relativePath) == ["a/IMG_0001.MOV", "a.mov", "b/clip.mov", "c/d/e.mov"])
        #expect(entries.allSatisfy { $0.problem == nil && $0.size == 1 })
        #expect(entries.first?.path == folder.path + "/a/IMG_0001.MOV")
        // Everything, when no globs are given.
        #expect(walk([folder.path]).count == 7)
    }

    @Test func maxDepth() throws {
        let folder = try TemporaryFolder("depth")
        defer { folder.remove() }
        for name in ["top.mov", "one/a.mov", "one/two/b.mov"] { try folder.file(name) }
        #expect(walk([folder.path]) { $0.maxDepth = 0 }.map(\.relativePath) == ["top.mov"])
        #expect(walk([folder.path]) { $0.maxDepth = 1 }.map(\.relativePath) == ["one/a.mov", "top.mov"])
        #expect(walk([folder.path]).count == 3)
    }

    @Test func globMatching() {
        #expect(Glob("**/*.mov").matches("clip.mov"))
        #expect(Glob("**/*.mov").matches("a/b/CLIP.MOV"))
        #expect(!Glob("**/*.mov").matches("a/clip.mov.txt"))
        #expect(Glob("*.mov").matches("clip.mov"))
        #expect(!Glob("*.mov").matches("a/clip.mov"))
        #expect(Glob("**/.*").matches("a/.DS_Store"))
        #expect(Glob("**/.*").matches(".git"))
        #expect(!Glob("**/.*").matches("a/b.c"))
        #expect(Glob("pets/*/visit-?.m4a").matches("pets/rex/visit-1.m4a"))
        #expect(Glob("**/[ab]*.jpg").matches("x/apple.jpg"))
        #expect(!Glob("**/[!ab]*.jpg").matches("x/apple.jpg"))
        #expect(Glob("a/**/z").matches("a/z"))
        #expect(Glob("a/**/z").matches("a/b/c/z"))
    }

    @Test func symlinksAreSkippedUnlessFollowedAndLoopsAreReported() throws {
        let folder = try TemporaryFolder("links")
        defer { folder.remove() }
        let target = try folder.file("real/a.mov")
        try FileManager.default.createSymbolicLink(atPath: folder.path + "/link.mov", withDestinationPath: target)
        try FileManager.default.createSymbolicLink(atPath: folder.path + "/real/up", withDestinationPath: "..")
        try FileManager.default.createSymbolicLink(atPath: folder.path + "/self", withDestinationPath: "self")
        #expect(walk([folder.path]).map(\.relativePath) == ["real/a.mov"])

        let followed = walk([folder.path]) { $0.followSymlinks = true }
        #expect(followed.map(\.relativePath) == ["link.mov", "real/a.mov", "real/up", "self"])
        #expect(followed[0].problem == nil)
        #expect(followed[2].problem?.rule.rawValue == "symlink_loop")
        #expect(followed[3].problem?.rule.rawValue == "symlink_loop")
        #expect(followed[3].problem?.message.contains("resolves to itself") == true)
    }

    @Test func badNamesAndSpecialFilesAreReportedNotOpened() throws {
        let folder = try TemporaryFolder("names")
        defer { folder.remove() }
        // A name with a byte that is not UTF-8 (0xFF), made through the C API.
        var bytes = Array((folder.path + "/bad").utf8) + [0xFF] + Array(".mov".utf8) + [0]
        let fd = bytes.withUnsafeMutableBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_CREAT | O_WRONLY, 0o644) }
        }
        #expect(fd >= 0)
        close(fd)
        #expect(mkfifo(folder.path + "/pipe.mov", 0o644) == 0)
        let entries = walk([folder.path])
        #expect(entries.map(\.relativePath) == ["bad\\xFF.mov", "pipe.mov"])
        #expect(entries.map { $0.problem?.rule.rawValue } == ["file_name", nil])
        #expect(entries[1].skipReason == "not a regular file: a FIFO (named pipe)")
    }

    @Test func missingRootAndFileRoots() throws {
        let folder = try TemporaryFolder("roots")
        defer { folder.remove() }
        let file = try folder.file("one/clip.mov", "abc")
        let entries = walk([folder.path + "/nope", file])
        #expect(entries.count == 2)
        #expect(entries[0].problem?.rule.rawValue == "unreadable")
        #expect(entries[0].problem?.message == "cannot open: no such file or directory")
        #expect(entries[1].relativePath == "clip.mov")
        #expect(entries[1].size == 3)
        #expect(entries[1].problem == nil)
    }
}

@Suite struct RunnerTests {
    func pipeline(_ yaml: String) throws -> Pipeline {
        try Pipeline.parse(yaml: "version: 1\nname: test\n" + yaml, source: "test.yml", environment: [:])
    }

    @Test func tenThousandFilesInOrderWithFailuresCounted() throws {
        let folder = try TemporaryFolder("many")
        defer { folder.remove() }
        var expected: [String] = []
        for index in 0..<10_000 {
            let name = String(format: "d%02d/f%05d.%@", index % 7, index, index % 100 == 0 ? "bin" : "txt")
            try folder.file(name, "hello")
            expected.append(name)
        }
        expected.sort()
        let runner = Runner(
            pipeline: try pipeline("concurrency: 4\nstages:\n  - validate: { extensions: [txt], sniff: false }\n"),
            settings: RunSettings(workDirectory: folder.path + "/work"))
        var seen: [String] = []
        let summary = try runner.run(paths: [folder.path]) { seen.append($0.relativePath) }
        #expect(seen == expected)
        #expect(summary.passed == 9_900)
        #expect(summary.failed == 100)
        #expect(summary.line == "9900 passed, 100 failed, 0 skipped")
    }

    @Test func aFileThatVanishesFailsAloneAndTheBatchGoesOn() throws {
        let folder = try TemporaryFolder("vanish")
        defer { folder.remove() }
        try folder.file("a.mov", "abc")
        let gone = try folder.file("b.mov", "abc")
        try folder.file("c.mov", "abc")
        let runner = Runner(
            pipeline: try pipeline("stages:\n  - validate: { extensions: [mov], sniff: true }\n"),
            settings: RunSettings())
        let entries = Array(InputWalker(paths: [folder.path], spec: InputSpec()))
        try FileManager.default.removeItem(atPath: gone)
        let reports = entries.map { runner.process($0) }
        #expect(reports.map(\.status) == [.failed, .failed, .failed])
        // a and c fail on content (not media), b because it is gone: named, not a crash.
        #expect(reports[1].failures.map(\.rule.rawValue) == ["unreadable"])
        #expect(reports[1].failures.first?.message.contains("no such file or directory") == true)
        #expect(reports[0].failures.map(\.rule.rawValue) == ["content"])
    }

    @Test func aFolderNamedLikeAMovieFailsAsAFile() throws {
        // Walking descends into folders whatever their names; a folder handed to the stages as a file (a path that
        // changed kind after listing, or an explicit entry) fails with a message, never a crash.
        let folder = try TemporaryFolder("dir-mov")
        defer { folder.remove() }
        let directory = try folder.folder("x.mov")
        let runner = Runner(
            pipeline: try pipeline("stages:\n  - validate: { extensions: [mov], max_bytes: 1MB }\n"),
            settings: RunSettings())
        let report = runner.process(InputEntry(path: directory, relativePath: "x.mov", size: 4096))
        #expect(report.status == .failed)
        #expect(report.failures.map(\.rule.rawValue) == ["unreadable"])
        #expect(report.failures.first?.message.contains("directory") == true)
        #expect(Array(InputWalker(paths: [folder.path], spec: InputSpec())).isEmpty)
    }

    @Test func reportWriterFailureStopsTheRunAndIsRethrown() throws {
        let folder = try TemporaryFolder("stop")
        defer { folder.remove() }
        for index in 0..<50 { try folder.file("f\(index).txt") }
        let runner = Runner(
            pipeline: try pipeline("stages:\n  - validate: { sniff: false }\n"), settings: RunSettings())
        var count = 0
        #expect(throws: ReportError.self) {
            try runner.run(paths: [folder.path]) { _ in
                count += 1
                if count == 3 { throw ReportError("disk full") }
            }
        }
        #expect(count == 3)
    }
}

@Suite struct ProgressTests {
    @Test func statusLineCountsFilesBytesAndETA() {
        let progress = RunProgress()
        progress.setTotal(4)
        progress.begin(0, path: "a.mov")
        progress.stage(0, "upload")
        progress.bytes(0, done: 512 * 1024, total: 1024 * 1024)
        progress.begin(1, path: "b.mov")
        progress.end(1, size: 2 * 1024 * 1024, failed: true)
        let snapshot = progress.snapshot()
        #expect(snapshot.filesDone == 1)
        #expect(snapshot.filesFailed == 1)
        #expect(snapshot.bytesDone == 2_621_440)
        let expected = RunProgress.Active(path: "a.mov", stage: "upload", bytesDone: 524_288, bytesTotal: 1_048_576)
        #expect(snapshot.active == [expected])
        var fixed = snapshot
        fixed.elapsed = 10
        #expect(ProgressDisplay.statusLine(fixed) == "1/4 files (1 failed) · 2.5 MiB · 256 KiB/s · ETA 30s")
        #expect(ProgressDisplay.formatSeconds(3725) == "1h02m")
        #expect(ProgressDisplay.formatSeconds(65) == "1m05s")
    }
}
