import NativeFFmpeg

/// The picture formats a still output (a poster, a thumbnail sheet) can be written in.
package enum StillFormat: String, CaseIterable, Sendable {
    case jpeg
    /// Lossy WebP through libavcodec's libwebp encoder: about a third smaller than a JPEG of the same look.
    case webp

    /// The file extension of an output in this format.
    package var fileExtension: String { self == .jpeg ? "jpg" : "webp" }
}

/// How a still output is compressed: its format and quality. Shared by the poster picker and the sheet builder,
/// which differ in which frames they take, not in how they write them.
package struct StillEncoding: Sendable, Equatable {
    package var format: StillFormat
    /// 1…100, libjpeg's scale; libwebp's `quality` uses the same scale.
    package var quality: Int

    package init(_ format: StillFormat = .jpeg, quality: Int) {
        self.format = format
        self.quality = quality
    }

    /// `picture` compressed: a baseline 4:2:0 JPEG (TurboJPEG) or a lossy WebP (libwebp).
    package func encode(_ picture: Thumbnail) throws -> [UInt8] {
        switch format {
        case .jpeg: try picture.jpeg(quality: quality)
        case .webp:
            try WebPEncoder.encode(rgb: picture.rgb, width: picture.width, height: picture.height, quality: quality)
        }
    }
}

/// What a still made of a video's frames shares whichever frames it takes: how it is encoded, and the stream's
/// display-matrix rotation that turns its pictures upright.
package struct StillSettings: Sendable, Equatable {
    package var encoding: StillEncoding
    package var rotation: Double

    package init(_ encoding: StillEncoding, rotation: Double = 0) {
        self.encoding = encoding
        self.rotation = rotation
    }
}
