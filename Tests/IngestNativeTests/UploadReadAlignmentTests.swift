import Foundation
import Testing

@testable import IngestTestSupport
@testable import NativeCurl
@testable import NativeSystem

/// Issue 22 §4: the file's reads into curl's upload buffer are mutually aligned with it (the buffer's and the file
/// offset's positions within a 4 KiB page are equal), because the kernel's page-cache copy runs three to four times
/// slower on AMD Zen when the destination sits a few bytes past the source modulo 4 KiB — and curl's 256 KiB buffer
/// sits 16 bytes into a page. Driven as curl drives it: the same buffer each call, read until 0.
@Suite struct UploadReadAlignmentTests {
    /// Reads `body` the way curl's read callback does, into a buffer `skew` bytes into a page; returns the bytes and
    /// the position of the file data within a page, relative to the buffer, at the start of each call's read.
    func drive(_ body: HTTPBody, skew: Int, capacity: Int = 256 * 1024) throws -> (bytes: [UInt8], misaligned: [Int]) {
        let reader = try HTTPBodyReader(body: body)
        let page = 4096
        let raw = UnsafeMutableRawPointer.allocate(byteCount: capacity + page, alignment: page)
        defer { raw.deallocate() }
        let buffer = raw + skew
        var bytes: [UInt8] = []
        var misaligned: [Int] = []
        while true {
            let start = reader.position - Int64(body.head.count)
            guard let count = reader.read(into: buffer, capacity: capacity) else {
                Issue.record("read failed: \(String(describing: reader.problem))")
                break
            }
            if count == 0 { break }
            let fileOffset = (body.file?.offset ?? 0) + start
            if start >= 0, start < body.file?.size ?? 0 {
                misaligned.append((Int(bitPattern: buffer) - Int(fileOffset)) & (page - 1))
            }
            bytes += UnsafeRawBufferPointer(start: buffer, count: count)
        }
        return (bytes, misaligned)
    }

    @Test(arguments: [16, 0, 4080, 100])
    func aPutsReadsAfterTheFirstAreInStepWithCurlsBuffer(skew: Int) throws {
        let folder = try TemporaryFolder("read-alignment")
        defer { folder.remove() }
        let path = try writeRandomFile(folder.path + "/big.bin", size: (3 << 20) + 12_345, seed: 22)
        let (bytes, misaligned) = try drive(try HTTPBody.file(path), skew: skew)
        #expect(bytes == [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
        // The first read may be out of step (it brings the offset in step); every later one is in step.
        #expect(misaligned.dropFirst().allSatisfy { $0 == 0 }, "\(misaligned)")
        #expect(misaligned.count <= 14, "no more than one extra call: \(misaligned.count)")
    }

    /// A form's head before the file and its tail after: the bytes are intact and the file's reads fall in step
    /// after the first.
    @Test func aFormsFileReadsFallInStepAfterItsHead() throws {
        let folder = try TemporaryFolder("read-alignment-form")
        defer { folder.remove() }
        let path = try writeRandomFile(folder.path + "/big.bin", size: (1 << 20) + 777, seed: 23)
        let head = [UInt8]("--boundary\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\n".utf8)
        let tail = [UInt8]("\r\n--boundary--\r\n".utf8)
        let (bytes, misaligned) = try drive(try HTTPBody.file(path, head: head, tail: tail), skew: 16)
        #expect(bytes == head + [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) + tail)
        #expect(misaligned.dropFirst().allSatisfy { $0 == 0 }, "\(misaligned)")
    }

    /// An S3 part (a slice from an offset inside the file) reads exactly its bytes, in step after the first read.
    @Test func aPartsReadsAreInStepToo() throws {
        let folder = try TemporaryFolder("read-alignment-part")
        defer { folder.remove() }
        let path = try writeRandomFile(folder.path + "/big.bin", size: 3 << 20, seed: 24)
        let modified = try FileStatus(path: path, followLinks: true).modified
        let slice = HTTPBody.FileSlice(
            path: path, offset: 1_000_003, length: 1 << 20, fileSize: 3 << 20, modified: modified)
        let (bytes, misaligned) = try drive(HTTPBody(file: slice), skew: 16)
        let whole = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(bytes == Array(whole[1_000_003..<(1_000_003 + (1 << 20))]))
        #expect(misaligned.dropFirst().allSatisfy { $0 == 0 }, "\(misaligned)")
    }
}
