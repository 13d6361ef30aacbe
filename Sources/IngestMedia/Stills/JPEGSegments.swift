/// The metadata segments of a JPEG, found by walking its markers up to the first SOS (pure byte parsing: TurboJPEG
/// 2.1 has no API for APPn segments). The `jpeg` stage reads EXIF, XMP, IPTC, ICC and comments here and writes the
/// ones its `metadata` policy keeps into the new file.
package struct JPEGSegments: Sendable {
    /// The `Exif\0\0` APP1 payload (TIFF header onwards follows the 6-byte identifier), if any.
    package var exif: [UInt8]?
    /// Whole XMP APP1 segments (standard and extended), marker and length included.
    package var xmp: [[UInt8]] = []
    /// The Photoshop IRB APP13 segment that carries IPTC, marker and length included.
    package var iptc: [[UInt8]] = []
    /// The ICC profile reassembled from its `ICC_PROFILE` APP2 chunks (in sequence order).
    package var iccProfile: [UInt8]?
    /// COM segments, marker and length included.
    package var comments: [[UInt8]] = []
    /// The JFIF APP0 segment (density, version), if any.
    package var jfif: [UInt8]?
    /// Frame size from the SOFn marker: read before TurboJPEG so a bomb is refused from the header alone.
    package var frameWidth: Int?
    package var frameHeight: Int?
    /// Byte offset where the entropy-coded part starts (the first DQT/DHT/SOF… after the APPn block is kept with it):
    /// everything from the first non-metadata segment on, used to rewrite metadata losslessly.
    package var bodyStart: Int

    static let exifIdentifier: [UInt8] = Array("Exif".utf8) + [0, 0]
    static let xmpIdentifier: [UInt8] = Array("http://ns.adobe.com/xap/1.0/".utf8) + [0]
    static let xmpExtensionIdentifier: [UInt8] = Array("http://ns.adobe.com/xmp/extension/".utf8) + [0]
    static let iccIdentifier: [UInt8] = Array("ICC_PROFILE".utf8) + [0]
    static let photoshopIdentifier: [UInt8] = Array("Photoshop 3.0".utf8) + [0]

    package enum ParseError: Error, Equatable {
        case notJPEG
        case truncated(at: Int)
        case badMarker(at: Int)
    }

    /// Walks the markers from SOI to SOS. Throws when the structure before the image data is broken.
    package static func parse(_ bytes: [UInt8]) throws -> JPEGSegments {
        guard bytes.count >= 4, bytes[0] == 0xFF, bytes[1] == 0xD8 else { throw ParseError.notJPEG }
        var result = JPEGSegments(bodyStart: 2)
        var iccChunks: [(sequence: UInt8, data: ArraySlice<UInt8>)] = []
        var position = 2
        var inMetadataBlock = true
        while true {
            guard position + 4 <= bytes.count else { throw ParseError.truncated(at: position) }
            guard bytes[position] == 0xFF else { throw ParseError.badMarker(at: position) }
            var markerPosition = position + 1
            while markerPosition < bytes.count, bytes[markerPosition] == 0xFF { markerPosition += 1 }  // fill bytes
            guard markerPosition + 2 < bytes.count else { throw ParseError.truncated(at: markerPosition) }
            let marker = bytes[markerPosition]
            if marker == 0xD9 || marker == 0x01 || (0xD0...0xD7).contains(marker) {
                throw ParseError.badMarker(at: markerPosition)
            }
            let length = Int(bytes[markerPosition + 1]) << 8 | Int(bytes[markerPosition + 2])
            guard length >= 2 else { throw ParseError.badMarker(at: markerPosition) }
            let payloadStart = markerPosition + 3
            let end = markerPosition + 1 + length
            guard end <= bytes.count else { throw ParseError.truncated(at: end) }
            let payload = bytes[payloadStart..<end]
            let segment = Array(bytes[position..<end])
            let isMetadata = isMetadataMarker(marker)
            if inMetadataBlock && !isMetadata {
                inMetadataBlock = false
                result.bodyStart = position
            }
            switch marker {
            case 0xE0 where payload.starts(with: Array("JFIF".utf8) + [0]):
                if result.jfif == nil { result.jfif = segment }
            case 0xE1 where payload.starts(with: exifIdentifier):
                if result.exif == nil { result.exif = Array(payload) }
            case 0xE1 where payload.starts(with: xmpIdentifier) || payload.starts(with: xmpExtensionIdentifier):
                result.xmp.append(segment)
            case 0xED where payload.starts(with: photoshopIdentifier):
                result.iptc.append(segment)
            case 0xE2 where payload.starts(with: iccIdentifier) && payload.count > iccIdentifier.count + 2:
                let sequence = payload[payload.startIndex + iccIdentifier.count]
                iccChunks.append((sequence, payload.dropFirst(iccIdentifier.count + 2)))
            case 0xFE:
                result.comments.append(segment)
            case 0xC0...0xCF where marker != 0xC4 && marker != 0xC8 && marker != 0xCC:
                if payload.count >= 5 {
                    let base = payload.startIndex
                    result.frameHeight = Int(payload[base + 1]) << 8 | Int(payload[base + 2])
                    result.frameWidth = Int(payload[base + 3]) << 8 | Int(payload[base + 4])
                }
            case 0xDA:
                if !iccChunks.isEmpty {
                    result.iccProfile = iccChunks.sorted { $0.sequence < $1.sequence }.flatMap { $0.data }
                }
                return result
            default:
                break
            }
            position = end
        }
    }

    /// APPn and COM segments, except APP14 (Adobe): that one says how to read the colour channels, so it stays
    /// with the image data whatever the metadata policy.
    static func isMetadataMarker(_ marker: UInt8) -> Bool {
        ((0xE0...0xEF).contains(marker) && marker != 0xEE) || marker == 0xFE
    }

    /// The body of `bytes` with every APPn and COM segment before it removed: `SOI` + the rest from `bodyStart`,
    /// minus metadata segments that appear after the first table (rare, but XMP after DQT exists in the wild).
    package static func strippedBody(_ bytes: [UInt8], bodyStart: Int) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var position = bodyStart
        // Copy segments up to SOS, skipping metadata ones, then the rest verbatim.
        while position + 4 <= bytes.count, bytes[position] == 0xFF {
            let marker = bytes[position + 1]
            let length = Int(bytes[position + 2]) << 8 | Int(bytes[position + 3])
            let end = position + 2 + length
            if marker == 0xDA || end > bytes.count { break }
            if !isMetadataMarker(marker) { output.append(contentsOf: bytes[position..<end]) }
            position = end
        }
        output.append(contentsOf: bytes[position...])
        return output
    }

    /// An APPn segment (`FF En`, length, payload); nil when the payload does not fit the 16-bit length.
    package static func segment(marker: UInt8, payload: [UInt8]) -> [UInt8]? {
        let length = payload.count + 2
        guard length <= 0xFFFF else { return nil }
        return [0xFF, marker, UInt8(length >> 8), UInt8(length & 0xFF)] + payload
    }

    /// An ICC profile as `ICC_PROFILE` APP2 segments (ICC.1 Annex B: at most 65519 profile bytes each, numbered
    /// from 1); nil for a profile over 255 chunks.
    package static func iccSegments(_ profile: [UInt8]) -> [[UInt8]]? {
        let chunkSize = 65519
        let count = (profile.count + chunkSize - 1) / chunkSize
        guard count > 0, count <= 255 else { return nil }
        return (0..<count).compactMap { index in
            let chunk = profile[(index * chunkSize)..<min(profile.count, (index + 1) * chunkSize)]
            return segment(marker: 0xE2, payload: iccIdentifier + [UInt8(index + 1), UInt8(count)] + Array(chunk))
        }
    }

    /// `encoded` (a JPEG TurboJPEG wrote: SOI, JFIF APP0, tables …) with `segments` inserted after SOI and its JFIF
    /// APP0, as chunks for a write that copies nothing twice.
    package static func inserting(_ segments: [[UInt8]], into encoded: [UInt8]) -> [[UInt8]] {
        guard !segments.isEmpty, encoded.count >= 4 else { return [encoded] }
        var split = 2
        if encoded[2] == 0xFF, encoded[3] == 0xE0, encoded.count >= 6 {
            split = min(encoded.count, 4 + (Int(encoded[4]) << 8 | Int(encoded[5])))
        }
        return [Array(encoded[0..<split])] + segments + [Array(encoded[split...])]
    }
}
