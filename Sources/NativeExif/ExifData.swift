internal import CExif

/// Parsed EXIF (libexif's `ExifData`): orientation, DateTimeOriginal and GPS. `deinit` releases it
/// (`exif_data_unref`). The init reads only as much of a file as libexif's loader needs to find the APP1
/// segment, never the whole image.
package final class ExifData {
    /// Internal (not private) for the jpeg stage's rewrite in ExifData+Rewrite.swift.
    let data: UnsafeMutablePointer<CExif.ExifData>
    let byteOrder: ExifByteOrder

    /// EXIF of a JPEG file (`exif_loader_write_file`, which stops once the EXIF segment is read); nil when the
    /// file has no EXIF.
    package convenience init?(jpegFileAt path: String) {
        guard let loader = exif_loader_new() else { return nil }
        defer { exif_loader_unref(loader) }
        exif_loader_write_file(loader, path)
        guard let data = exif_loader_get_data(loader) else { return nil }
        self.init(owning: data)
    }

    /// EXIF from a blob: either a JPEG APP1 payload (`Exif\0\0` + TIFF) or a bare TIFF structure (`II*\0`, `MM\0*`),
    /// as HEIF stores it after its 4-byte offset (`exif_data_new_from_data`). Nil when libexif finds no EXIF.
    package convenience init?(blob: [UInt8]) {
        var bytes = blob
        let exifHeader: [UInt8] = [0x45, 0x78, 0x69, 0x66, 0, 0]  // "Exif\0\0"
        let isTIFF =
            bytes.count >= 4
            && (bytes[0..<4].elementsEqual([0x49, 0x49, 0x2A, 0]) || bytes[0..<4].elementsEqual([0x4D, 0x4D, 0, 0x2A]))
        // libexif only accepts the APP1 form: give a bare TIFF the header it expects.
        if isTIFF { bytes = exifHeader + bytes }
        guard bytes.count >= 8, bytes.count <= Int(UInt32.max) else { return nil }
        let loaded = bytes.withUnsafeBufferPointer { buffer in
            exif_data_new_from_data(buffer.baseAddress, UInt32(buffer.count))
        }
        guard let loaded else { return nil }
        self.init(owning: loaded)
    }

    /// EXIF from HEIF's Exif item: a big-endian 4-byte offset to the TIFF header, then the data (ISO/IEC 23008-12).
    package convenience init?(heifExifItem item: [UInt8]) {
        guard item.count > 4 else { return nil }
        let offset = item[0..<4].reduce(0) { ($0 << 8) | Int($1) }
        let start = 4 + offset
        // Some writers put "Exif\0\0" before the TIFF header and count it in the offset, others do not.
        if start < item.count, let parsed = ExifData(blob: Array(item[start...])), parsed.hasContent {
            self.init(taking: parsed)
        } else if let parsed = ExifData(blob: Array(item[4...])) {
            self.init(taking: parsed)
        } else {
            return nil
        }
    }

    private init(owning data: UnsafeMutablePointer<CExif.ExifData>) {
        self.data = data
        self.byteOrder = exif_data_get_byte_order(data)
    }

    /// Shares another instance's data (a reference of its own, released by this `deinit`).
    private init(taking other: ExifData) {
        exif_data_ref(other.data)
        self.data = other.data
        self.byteOrder = other.byteOrder
    }

    deinit { exif_data_unref(data) }

    private var hasContent: Bool {
        [Self.ifd0, Self.ifdExif, Self.ifdGPS].contains { ifd in content(ifd).map { $0.pointee.count > 0 } ?? false }
    }

    /// EXIF orientation 1…8, nil when absent or out of range.
    package var orientation: Int? {
        guard let entry = entry(Self.ifd0, ExifTag(rawValue: 0x0112)), entry.pointee.format == EXIF_FORMAT_SHORT,
            entry.pointee.components >= 1, let bytes = entry.pointee.data
        else { return nil }
        let value = Int(exif_get_short(bytes, byteOrder))
        return (1...8).contains(value) ? value : nil
    }

    /// DateTimeOriginal as written (`2024:05:01 12:34:56`).
    package var dateTimeOriginal: String? {
        guard let entry = entry(Self.ifdExif, ExifTag(rawValue: 0x9003)) else { return nil }
        return ascii(entry)
    }

    /// True when both GPS latitude and longitude are present.
    package var hasGPS: Bool { gpsLatitude != nil && gpsLongitude != nil }

    /// Latitude in degrees, negative south; nil when absent or malformed.
    package var gpsLatitude: Double? { coordinate(value: 0x0002, reference: 0x0001, negative: "S") }
    /// Longitude in degrees, negative west.
    package var gpsLongitude: Double? { coordinate(value: 0x0004, reference: 0x0003, negative: "W") }
    /// Altitude in metres, negative below sea level (GPSAltitudeRef 1).
    package var gpsAltitude: Double? {
        guard let altitude = entry(Self.ifdGPS, ExifTag(rawValue: 0x0006)), let values = rationals(altitude),
            let value = values.first
        else { return nil }
        var below = false
        if let reference = entry(Self.ifdGPS, ExifTag(rawValue: 0x0005)), reference.pointee.components >= 1,
            let bytes = reference.pointee.data
        {
            below = bytes[0] == 1
        }
        return below ? -value : value
    }

    // MARK: - libexif access

    private static let ifd0 = 0
    private static let ifdExif = 2
    private static let ifdGPS = 3

    private func content(_ ifd: Int) -> UnsafeMutablePointer<ExifContent>? {
        let ifds = data.pointee.ifd
        switch ifd {
        case 0: return ifds.0
        case 1: return ifds.1
        case 2: return ifds.2
        case 3: return ifds.3
        case 4: return ifds.4
        default: return nil
        }
    }

    private func entry(_ ifd: Int, _ tag: ExifTag) -> UnsafeMutablePointer<ExifEntry>? {
        guard let content = content(ifd) else { return nil }
        return exif_content_get_entry(content, tag)
    }

    private func ascii(_ entry: UnsafeMutablePointer<ExifEntry>) -> String? {
        guard entry.pointee.format == EXIF_FORMAT_ASCII, let bytes = entry.pointee.data, entry.pointee.size > 0 else {
            return nil
        }
        let buffer = UnsafeBufferPointer(start: bytes, count: Int(entry.pointee.size))
        let text = String(decoding: buffer.prefix { $0 != 0 }, as: UTF8.self)
        return text.isEmpty ? nil : text
    }

    private func rationals(_ entry: UnsafeMutablePointer<ExifEntry>) -> [Double]? {
        guard entry.pointee.format == EXIF_FORMAT_RATIONAL, let bytes = entry.pointee.data else { return nil }
        let count = Int(entry.pointee.components)
        guard count > 0, Int(entry.pointee.size) >= count * 8 else { return nil }
        var values: [Double] = []
        for index in 0..<count {
            let rational = exif_get_rational(bytes + index * 8, byteOrder)
            guard rational.denominator != 0 else { return nil }
            values.append(Double(rational.numerator) / Double(rational.denominator))
        }
        return values
    }

    private func coordinate(value: UInt32, reference: UInt32, negative: Character) -> Double? {
        guard let found = entry(Self.ifdGPS, ExifTag(rawValue: value)), let parts = rationals(found), parts.count >= 1
        else { return nil }
        var degrees = parts[0]
        if parts.count >= 2 { degrees += parts[1] / 60 }
        if parts.count >= 3 { degrees += parts[2] / 3600 }
        if let referenceEntry = entry(Self.ifdGPS, ExifTag(rawValue: reference)), let text = ascii(referenceEntry),
            text.uppercased().first == negative
        {
            degrees = -degrees
        }
        return degrees
    }
}
