import Foundation
import NativeXXHash
import NativeZlib
import Testing

@testable import Ingest

/// The checksums in IngestNative against published check values ("123456789") and against themselves: slice-by-8
/// equals byte-at-a-time, `combine` equals one pass, streaming XXH3 equals one shot and `xxhsum -H2` (Debian's
/// xxhash package, not the code under test).
@Suite struct ChecksumVectorTests {
    let nine = Array("123456789".utf8)

    func crc(_ kind: CRCKind, _ bytes: [UInt8]) -> UInt64 {
        var crc = CRC(kind)
        bytes.withUnsafeBytes { crc.update($0) }
        return crc.value
    }

    @Test func checkValues() {
        #expect(crc(.crc64nvme, nine) == 0xAE8B_1486_0A79_9888)
        #expect(crc(.crc32c, nine) == 0xE306_9283)
        #expect(crc(.crc32, nine) == 0xCBF4_3926)
        for kind in CRCKind.allCases { #expect(crc(kind, []) == 0) }
        var crc = CRC(.crc64nvme)
        nine.withUnsafeBytes { crc.update($0) }
        #expect(crc.bigEndianBytes == [0xAE, 0x8B, 0x14, 0x86, 0x0A, 0x79, 0x98, 0x88])
    }

    /// 1,000 bytes in one call (the 8-byte loop) and one byte a call (the tail loop) agree; any split combines.
    @Test(arguments: CRCKind.allCases) func sliceBy8AndCombine(kind: CRCKind) {
        var generator = SystemRandomNumberGenerator()
        let data = (0..<1000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        var bytewise = CRC(kind)
        for byte in data { [byte].withUnsafeBytes { bytewise.update($0) } }
        #expect(crc(kind, data) == bytewise.value)
        for split in [0, 1, 7, 8, 9, 500, 999, 1000] {
            let combined = CRC.combine(
                kind, crc(kind, Array(data[..<split])), crc(kind, Array(data[split...])),
                secondLength: Int64(data.count - split))
            #expect(combined == crc(kind, data), "split at \(split)")
        }
    }

    @Test func xxh3MatchesXXHSum() throws {
        #expect(
            XXH3Hasher.digest(of: UnsafeRawBufferPointer(start: nil, count: 0)).hexString
                == "99aa06d3014798d86001c324468d497f")
        let folder = try TemporaryFolder("xxh3")
        defer { folder.remove() }
        let path = try writeRandomFile(folder.path + "/data.bin", size: 3 << 20 | 123, seed: 5)
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let hasher = try XXH3Hasher()
        data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {  // odd-sized pieces, as reads hand them over
                let piece = min(77_777, raw.count - offset)
                hasher.update(UnsafeRawBufferPointer(rebasing: raw[offset..<offset + piece]))
                offset += piece
            }
        }
        let oneShot = data.withUnsafeBytes { XXH3Hasher.digest(of: $0) }
        #expect(hasher.digest() == oneShot)
        let xxhsum = try runCommand("/usr/bin/env", ["xxhsum", "-H2", path])
        #expect(xxhsum.status == 0, "xxhsum (apt install xxhash): \(xxhsum.stderr)")
        #expect(xxhsum.stdout.hasPrefix(oneShot.hexString + " "), "\(xxhsum.stdout)")
    }
}

extension Array where Element == UInt8 {
    fileprivate var hexString: String { map { String(format: "%02x", $0) }.joined() }
}
