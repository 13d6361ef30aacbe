internal import CHeif

extension HEIFImage {
    /// The primary image's ICC profile (`heif_image_handle_get_raw_color_profile`), so a Display P3 photo keeps
    /// its colours after conversion; nil when it has none (or only an nclx description).
    package func iccProfile() throws -> [UInt8]? {
        let size = heif_image_handle_get_raw_color_profile_size(handle)
        // A profile of more than 16 MiB is not a colour profile anyone should carry into a JPEG.
        guard size > 0, size <= 16 << 20 else { return nil }
        var bytes = [UInt8](repeating: 0, count: size)
        let result = heif_image_handle_get_raw_color_profile(handle, &bytes)
        guard result.code == heif_error_Ok else {
            throw HEIFError(
                call: "heif_image_handle_get_raw_color_profile", code: Int(result.code.rawValue),
                subcode: Int(result.subcode.rawValue),
                message: result.message.map { String(cString: $0) } ?? "libheif error \(result.code.rawValue)")
        }
        return bytes
    }
}
