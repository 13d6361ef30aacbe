import CZlib

/// The CRCs S3 checks as `x-amz-checksum-*`: CRC-32 (zlib's), CRC-32C (Castagnoli) and CRC-64/NVME, all reflected
/// with every bit set at the start and inverted at the end, so a whole object's CRC follows from its parts' CRCs
/// (`combine`) — S3's full-object checksum of a multipart upload.
package enum CRCKind: String, Sendable, CaseIterable {
    case crc32, crc32c, crc64nvme

    /// Width in bytes: S3 sends the value big-endian, base64-encoded.
    package var byteCount: Int { self == .crc64nvme ? 8 : 4 }

    /// The reflected polynomial.
    var polynomial: UInt64 {
        switch self {
        case .crc32: return 0xEDB8_8320
        case .crc32c: return 0x82F6_3B78
        case .crc64nvme: return 0x9A6C_9329_AC4B_C9B5
        }
    }

    var mask: UInt64 { self == .crc64nvme ? UInt64.max : 0xFFFF_FFFF }
}

/// A running CRC of one kind over a stream of bytes.
package struct CRC: Sendable, Equatable {
    package let kind: CRCKind
    /// The CRC of the bytes so far (final form: inverted), as zlib's `crc32` keeps it.
    package private(set) var value: UInt64 = 0
    package private(set) var count: Int64 = 0

    package init(_ kind: CRCKind) { self.kind = kind }

    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        count += Int64(bytes.count)
        switch kind {
        case .crc32:
            var offset = 0
            while offset < bytes.count {
                let piece = min(bytes.count - offset, 1 << 30)
                value = UInt64(
                    crc32(UInt(value), (base + offset).assumingMemoryBound(to: UInt8.self), UInt32(piece)))
                offset += piece
            }
        case .crc32c: value = ~CRCTables.crc32c.update(~value & kind.mask, bytes) & kind.mask
        case .crc64nvme: value = ~CRCTables.crc64nvme.update(~value, bytes)
        }
    }

    /// The value big-endian (`byteCount` bytes): what `x-amz-checksum-*` carries, base64-encoded.
    package var bigEndianBytes: [UInt8] {
        (0..<kind.byteCount).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
    }

    /// The CRC of A followed by B from CRC(A), CRC(B) and B's length (zlib's `crc32_combine`, for any of the kinds).
    package static func combine(_ kind: CRCKind, _ first: UInt64, _ second: UInt64, secondLength: Int64) -> UInt64 {
        if kind == .crc32 { return UInt64(crc32_combine(UInt(first), UInt(second), Int(secondLength))) }
        let top: UInt64 = kind == .crc64nvme ? 1 << 63 : 1 << 31
        return multiply(power(ofXTo: UInt64(max(0, secondLength)), kind: kind, top: top), first, kind, top) ^ second
    }

    /// a·b modulo the polynomial, in the reflected representation (the highest power at bit 0).
    private static func multiply(_ a: UInt64, _ b: UInt64, _ kind: CRCKind, _ top: UInt64) -> UInt64 {
        var mask = top
        var product: UInt64 = 0
        var b = b
        while mask != 0 {
            if a & mask != 0 {
                product ^= b
                if a & (mask &- 1) == 0 { break }
            }
            mask >>= 1
            b = b & 1 != 0 ? (b >> 1) ^ kind.polynomial : b >> 1
        }
        return product
    }

    /// x^(8·bytes) modulo the polynomial: squaring x^(2^k) for each set bit of the length in bits.
    private static func power(ofXTo bytes: UInt64, kind: CRCKind, top: UInt64) -> UInt64 {
        var square = top >> 1  // x^1
        for _ in 0..<3 { square = multiply(square, square, kind, top) }  // x^8: one byte
        var result = top  // x^0
        var remaining = bytes
        while remaining != 0 {
            if remaining & 1 != 0 { result = multiply(square, result, kind, top) }
            remaining >>= 1
            square = multiply(square, square, kind, top)
        }
        return result
    }
}

/// Slice-by-8 tables of a reflected CRC: eight bytes a step, each through its own table.
package struct CRCTables: Sendable {
    private let table: [UInt64]

    static let crc32c = CRCTables(polynomial: CRCKind.crc32c.polynomial)
    static let crc64nvme = CRCTables(polynomial: CRCKind.crc64nvme.polynomial)

    init(polynomial: UInt64) {
        var table = [UInt64](repeating: 0, count: 8 * 256)
        for byte in 0..<256 {
            var crc = UInt64(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ polynomial : crc >> 1 }
            table[byte] = crc
        }
        for slice in 1..<8 {
            for byte in 0..<256 {
                let previous = table[(slice - 1) * 256 + byte]
                table[slice * 256 + byte] = (previous >> 8) ^ table[Int(previous & 0xFF)]
            }
        }
        self.table = table
    }

    /// Runs the raw (not inverted) register `crc` over `bytes`.
    func update(_ crc: UInt64, _ bytes: UnsafeRawBufferPointer) -> UInt64 {
        table.withUnsafeBufferPointer { t in
            var crc = crc
            var offset = 0
            let count = bytes.count
            while count - offset >= 8 {
                let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) ^ crc
                crc =
                    t[7 * 256 + Int(word & 0xFF)] ^ t[6 * 256 + Int((word >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((word >> 16) & 0xFF)] ^ t[4 * 256 + Int((word >> 24) & 0xFF)]
                    ^ t[3 * 256 + Int((word >> 32) & 0xFF)] ^ t[2 * 256 + Int((word >> 40) & 0xFF)]
                    ^ t[256 + Int((word >> 48) & 0xFF)] ^ t[Int(word >> 56)]
                offset += 8
            }
            while offset < count {
                crc = t[Int((crc ^ UInt64(bytes[offset])) & 0xFF)] ^ (crc >> 8)
                offset += 1
            }
            return crc
        }
    }
}
