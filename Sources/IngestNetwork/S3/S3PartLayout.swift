import Foundation
import NativeCurl
import NativeSystem

/// How a multipart upload cuts a file: the part size within S3's limits, and each part as a slice read from disk.
extension S3Uploader {
    /// The part size and count of a multipart upload of `fileSize` bytes: `part_size`, raised to whole MiB when
    /// the file would need more than 10,000 parts.
    func partLayout(fileSize: Int64) -> (size: Int64, count: Int) {
        var size = partSize
        let needed = (fileSize + Self.maximumPartsMinusOne) / S3UploadOptions.maximumParts
        if needed > size { size = (needed + (1 << 20) - 1) / (1 << 20) * (1 << 20) }
        return (size, Int((fileSize + size - 1) / size))
    }

    /// Part `index` (0-based) of a file cut into parts of `size` bytes: a slice read from disk, which fails the
    /// transfer when the file is no longer the one `status` describes (inode, size, mtime, ctime).
    static func partSlice(_ index: Int, size: Int64, path: String, status: FileStatus) -> HTTPBody.FileSlice {
        let offset = Int64(index) * size
        var slice = HTTPBody.FileSlice(
            path: path, offset: offset, length: min(size, status.size - offset), fileSize: status.size,
            modified: status.modified)
        slice.identity = status
        return slice
    }

    /// Added before dividing by the part limit, to round the needed part size up.
    static let maximumPartsMinusOne = S3UploadOptions.maximumParts - 1
}
