internal import CHeif

/// A failed libheif call: the function, libheif's error code and subcode, and its own message.
package struct HEIFError: Error, Hashable, Sendable, CustomStringConvertible {
    package var call: String
    package var code: Int
    package var subcode: Int
    package var message: String

    package var description: String { "\(call): \(message)" }

    /// Throws when `error` is not `heif_error_Ok`.
    fileprivate static func check(_ call: String, _ error: heif_error) throws {
        guard error.code != heif_error_Ok else { return }
        let message = error.message.map { String(cString: $0) } ?? "libheif error \(error.code.rawValue)"
        throw HEIFError(
            call: call, code: Int(error.code.rawValue), subcode: Int(error.subcode.rawValue), message: message)
    }
}

/// The primary image of a HEIF/HEIC file: a `heif_context` (`heif_context_read_from_file`, which reads boxes
/// and loads image data on demand) plus its primary `heif_image_handle`; `deinit` releases both.
package final class HEIFImage {
    private let context: OpaquePointer
    /// Internal (not private) for the colour profile read in HEIFImage+ColorProfile.swift.
    let handle: OpaquePointer

    /// libheif asks for `heif_init` once per process (it loads decoder plugins); it is reference counted and
    /// this one reference is kept for the life of the process.
    private static let initialized: Bool = {
        _ = heif_init(nil)
        return true
    }()

    /// Opens `path` and its primary image. Throws `HEIFError`.
    package init(path: String) throws {
        _ = Self.initialized
        guard let context = heif_context_alloc() else {
            throw HEIFError(call: "heif_context_alloc", code: -1, subcode: 0, message: "out of memory")
        }
        do {
            try HEIFError.check("heif_context_read_from_file", heif_context_read_from_file(context, path, nil))
            var handle: OpaquePointer? = nil
            try HEIFError.check(
                "heif_context_get_primary_image_handle", heif_context_get_primary_image_handle(context, &handle))
            guard let handle else {
                throw HEIFError(
                    call: "heif_context_get_primary_image_handle", code: -1, subcode: 0, message: "no primary image")
            }
            self.context = context
            self.handle = handle
        } catch {
            heif_context_free(context)
            throw error
        }
    }

    deinit {
        heif_image_handle_release(handle)
        heif_context_free(context)
    }

    /// Width as displayed (after the file's rotation and mirroring boxes), `heif_image_handle_get_width`.
    package var width: Int { Int(heif_image_handle_get_width(handle)) }
    /// Height as displayed.
    package var height: Int { Int(heif_image_handle_get_height(handle)) }

    /// The primary image's first Exif metadata item as stored (4-byte TIFF offset, then the EXIF data); nil when
    /// there is none. See `ExifData(heifExifItem:)`.
    package func exifItem() throws -> [UInt8]? {
        let count = heif_image_handle_get_number_of_metadata_blocks(handle, "Exif")
        guard count > 0 else { return nil }
        var ids = [heif_item_id](repeating: 0, count: Int(count))
        let listed = heif_image_handle_get_list_of_metadata_block_IDs(handle, "Exif", &ids, count)
        guard listed > 0, let id = ids.first else { return nil }
        let size = heif_image_handle_get_metadata_size(handle, id)
        // An Exif item larger than a JPEG APP1 segment could ever be (64 KiB) is not worth reading whole.
        guard size > 0, size <= 1 << 20 else { return nil }
        var bytes = [UInt8](repeating: 0, count: size)
        try HEIFError.check("heif_image_handle_get_metadata", heif_image_handle_get_metadata(handle, id, &bytes))
        return bytes
    }

    /// Decoded pixels, 8-bit interleaved RGB: row `y` starts at `y * stride` and holds `width * 3` bytes.
    package struct RGBPixels: Sendable {
        package var width: Int
        package var height: Int
        package var stride: Int
        package var bytes: [UInt8]
    }

    /// Decodes the primary image to interleaved RGB (`heif_decode_image`) and lends its plane to `body`:
    /// `(width, height, stride, bytes)`, valid only inside the closure. Throws `HEIFError`.
    package func withDecodedInterleavedRGB<R>(
        _ body: (_ width: Int, _ height: Int, _ stride: Int, _ bytes: UnsafeRawBufferPointer) throws -> R
    ) throws -> R {
        var image: OpaquePointer? = nil
        try HEIFError.check(
            "heif_decode_image",
            heif_decode_image(handle, &image, heif_colorspace_RGB, heif_chroma_interleaved_RGB, nil))
        guard let image else {
            throw HEIFError(call: "heif_decode_image", code: -1, subcode: 0, message: "no image decoded")
        }
        defer { heif_image_release(image) }
        let width = Int(heif_image_get_width(image, heif_channel_interleaved))
        let height = Int(heif_image_get_height(image, heif_channel_interleaved))
        var stride: Int32 = 0
        guard let plane = heif_image_get_plane_readonly(image, heif_channel_interleaved, &stride), width > 0,
            height > 0, Int(stride) >= width * 3
        else {
            throw HEIFError(
                call: "heif_image_get_plane_readonly", code: -1, subcode: 0, message: "no interleaved RGB plane")
        }
        let bytes = UnsafeRawBufferPointer(start: plane, count: Int(stride) * height)
        return try body(width, height, Int(stride), bytes)
    }

    /// `withDecodedInterleavedRGB` copied into an array (rows keep libheif's stride).
    package func decodeInterleavedRGB() throws -> RGBPixels {
        try withDecodedInterleavedRGB { width, height, stride, bytes in
            RGBPixels(width: width, height: height, stride: stride, bytes: [UInt8](bytes))
        }
    }
}

extension HEIFImage {
    /// `libheif 1.15.1`, from the library loaded.
    package static var libraryVersion: String { "libheif \(heif_get_version().map { String(cString: $0) } ?? "?")" }
}
