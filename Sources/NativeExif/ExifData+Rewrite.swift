internal import CExif

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension ExifData {
    /// The EXIF for a re-encoded photo, rebuilt by libexif (`exif_data_save_data`) as a JPEG APP1 payload
    /// (`Exif\0\0` + TIFF): orientation set to 1 (the pixels are upright now), PixelX/YDimension set to the new
    /// size, the IFD1 thumbnail dropped (it shows the old, unrotated picture), and with `removeGPS` every GPS tag
    /// removed (libexif writes no GPS IFD pointer for an empty GPS IFD). Edits this instance. Nil when libexif
    /// produces nothing.
    package func rewrittenForReencode(width: Int, height: Int, removeGPS: Bool) -> [UInt8]? {
        let ifds = data.pointee.ifd
        if let ifd0 = ifds.0, let orientation = exif_content_get_entry(ifd0, ExifTag(rawValue: 0x0112)),
            orientation.pointee.format == EXIF_FORMAT_SHORT, orientation.pointee.components >= 1,
            let bytes = orientation.pointee.data
        {
            exif_set_short(bytes, byteOrder, 1)
        }
        if let exif = ifds.2 {
            for (tag, value) in [(UInt32(0xA002), width), (UInt32(0xA003), height)] {
                guard let entry = exif_content_get_entry(exif, ExifTag(rawValue: tag)), entry.pointee.components >= 1,
                    let bytes = entry.pointee.data
                else { continue }
                if entry.pointee.format == EXIF_FORMAT_SHORT, value <= Int(UInt16.max) {
                    exif_set_short(bytes, byteOrder, UInt16(value))
                } else if entry.pointee.format == EXIF_FORMAT_LONG {
                    exif_set_long(bytes, byteOrder, UInt32(clamping: value))
                }
            }
        }
        Self.removeAllEntries(ifds.1)
        if data.pointee.data != nil {
            // libexif allocated the thumbnail with its default allocator (calloc) and frees it with free().
            free(data.pointee.data)
            data.pointee.data = nil
            data.pointee.size = 0
        }
        if removeGPS { Self.removeAllEntries(ifds.3) }

        var output: UnsafeMutablePointer<UInt8>? = nil
        var size: UInt32 = 0
        exif_data_save_data(data, &output, &size)
        guard let output else { return nil }
        defer { free(output) }
        return Array(UnsafeBufferPointer(start: output, count: Int(size)))
    }

    private static func removeAllEntries(_ content: UnsafeMutablePointer<ExifContent>?) {
        guard let content else { return }
        while content.pointee.count > 0, let entries = content.pointee.entries, let first = entries[0] {
            exif_content_remove_entry(content, first)
        }
    }
}
