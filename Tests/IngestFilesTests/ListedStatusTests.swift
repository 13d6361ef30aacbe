import Foundation
import NativeSystem
import Testing

@testable import IngestCore
@testable import IngestCoreTestSupport
@testable import IngestFiles
@testable import IngestTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// The model holds a listed file's `stat` as plain integers (`ListedStatus`, IngestCore, no C); IngestFiles makes it
/// from NativeSystem's `FileStatus` and turns it back for the wrappers that pin a file to it. Nothing of the identity
/// may be lost on the way: the `changed` check (issue 19) compares device, inode, size, mtime and ctime.
@Suite struct ListedStatusTests {
    @Test func theRoundTripKeepsEveryField() throws {
        let folder = try TemporaryFolder("listed-status")
        let path = try folder.file("a.mov", "0123456789")
        let status = try FileStatus(path: path, followLinks: true)
        let listed = ListedStatus(status)
        #expect(listed.size == 10 && listed.device == status.device && listed.inode == status.inode)
        #expect(listed.modified == status.modified && listed.statusChanged == status.statusChanged)
        #expect(FileStatus(listed) == status)
        #expect(try ListedStatus(path: path) == listed)
    }

    /// A rewrite in place with the mtime put back shows only in the ctime, which the listed value must carry.
    @Test func aRewriteInPlaceWithTheOldMtimeIsChanged() throws {
        let folder = try TemporaryFolder("listed-status")
        let path = try folder.file("a.mov", "0123456789")
        let item = Item(file: ListedFile(path: path, relativePath: "a.mov", size: 10).statted())
        #expect(item.validated != nil)
        #expect(item.changedFailure(stage: "upload", found: "before stage upload") == nil)
        let modified = try #require(item.validated).modified
        // The kernel stamps ctime from a clock that ticks every few milliseconds: past one tick, the rewrite's ctime
        // differs from the listing's (a wait for the kernel's clock, not for a result).
        Thread.sleep(forTimeInterval: 0.05)
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.write(contentsOf: Data("9876543210".utf8))
        try handle.close()
        // The mtime put back to the nanosecond (`touch -d` does the same): only the ctime tells.
        let stamp = timespec(tv_sec: Int(modified / 1_000_000_000), tv_nsec: Int(modified % 1_000_000_000))
        let times = [stamp, stamp]  // access and modification time
        #expect(utimensat(AT_FDCWD, path, times, 0) == 0)
        #expect(try FileStatus(path: path, followLinks: true).modified == modified)
        item.knownSHA256 = "cached"
        let failure = try #require(item.changedFailure(stage: "upload", found: "before stage upload"))
        #expect(failure.rule == .changed)
        #expect(failure.message.contains("new ctime"), "\(failure.message)")
        #expect(item.knownSHA256 == nil, "the hash of the changed file is dropped")
    }

    /// `Item.onDisk` (no `stat` taken) is validated against nothing: no `changed` failure.
    @Test func anItemNotListedHasNothingToCompare() throws {
        let folder = try TemporaryFolder("listed-status")
        let item = Item.onDisk(try folder.file("a.mov", "x"))
        #expect(item.validated == nil)
        #expect(item.changedFailure(stage: "upload", found: "after the last stage") == nil)
    }
}
