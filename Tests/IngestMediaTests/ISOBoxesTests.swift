import Foundation
import Testing

@testable import IngestMedia
@testable import IngestTestSupport

/// The top-level box walk on crafted headers: 32-bit sizes, 64-bit largesizes, size 0, and what is not a box.
@Suite struct ISOBoxesTests {
    func box(_ type: String, size: UInt32, large: UInt64? = nil, payload: Int = 0) -> [UInt8] {
        var bytes = withUnsafeBytes(of: size.bigEndian, Array.init) + Array(type.utf8)
        if let large { bytes += withUnsafeBytes(of: large.bigEndian, Array.init) }
        return bytes + [UInt8](repeating: 0, count: payload)
    }

    func overrun(_ bytes: [UInt8]) throws -> ISOBoxes.Overrun? {
        let folder = try TemporaryFolder("boxes")
        defer { folder.remove() }
        let path = folder.path + "/boxes"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return ISOBoxes.overrun(path: path, size: Int64(bytes.count))
    }

    @Test func boxesThatFitPass() throws {
        let ftyp = box("ftyp", size: 16, payload: 8)
        #expect(try overrun(ftyp + box("moov", size: 24, payload: 16) + box("mdat", size: 40, payload: 32)) == nil)
        #expect(try overrun(ftyp + box("mdat", size: 1, large: 48, payload: 32)) == nil)
        #expect(try overrun(ftyp + box("mdat", size: 0, payload: 100)) == nil)
    }

    @Test func aBoxClaimingMoreThanTheFileHasIsAnOverrun() throws {
        let ftyp = box("ftyp", size: 16, payload: 8)
        #expect(try overrun(ftyp + box("mdat", size: 1000, payload: 10)) == .init(type: "mdat", end: 1016))
        // The 64-bit largesize, past 4 GiB.
        #expect(
            try overrun(ftyp + box("mdat", size: 1, large: 5_000_000_000, payload: 10))
                == .init(type: "mdat", end: 5_000_000_016))
        #expect(try overrun(ftyp + box("moov", size: 500, payload: 10)) == .init(type: "moov", end: 516))
    }

    @Test func whatIsNotABoxIsLeftToTheDemuxer() throws {
        let ftyp = box("ftyp", size: 16, payload: 8)
        #expect(try overrun(ftyp + box("mdat", size: 4, payload: 100)) == nil)  // size below a header's
        #expect(try overrun(ftyp + [0, 0, 1, 0, 0xFF, 0, 0x10, 0x20] + [UInt8](repeating: 0, count: 10)) == nil)
        #expect(try overrun(ftyp + [0, 0, 0]) == nil)  // a partial header at the end
    }
}
