import NativeJPEG
import NativeSystem

/// A small picture of one file for the HTML report's contact sheet: packed 8-bit RGB, rows `width * 3` bytes
/// apart, at most `Thumbnail.maxSide` on its long side. Small enough to hold, turn and measure in plain Swift.
package struct Thumbnail: Sendable, Equatable {
    /// The long side of every thumbnail, the most the contact sheet shows (the bound).
    package static let maxSide = 320

    package var width: Int
    package var height: Int
    package var rgb: [UInt8]

    package init(width: Int, height: Int, rgb: [UInt8]) {
        self.width = width
        self.height = height
        self.rgb = rgb
    }

    /// Copies packed rows with any `stride` (swscale's aligned rows) into tight rows.
    package init(width: Int, height: Int, stride: Int, rows: [UInt8]) {
        var tight = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            let from = y * stride
            let to = y * width * 3
            tight.replaceSubrange(to..<to + width * 3, with: rows[from..<from + width * 3])
        }
        self.init(width: width, height: height, rgb: tight)
    }

    /// The size that fits `width`×`height` within `side` on its long side, keeping the aspect ratio (never
    /// larger than the source, never 0).
    package static func fitting(width: Int, height: Int, within side: Int = maxSide) -> (width: Int, height: Int) {
        guard width > 0, height > 0 else { return (1, 1) }
        let long = max(width, height)
        guard long > side else { return (width, height) }
        let scale = Double(side) / Double(long)
        return (max(1, Int((Double(width) * scale).rounded())), max(1, Int((Double(height) * scale).rounded())))
    }

    /// Variance of the luma (BT.601 weights, 0…255 scale): near 0 for a black, white or flat frame, in the
    /// hundreds or thousands for a picture. Samples every pixel; thumbnails are small.
    package var lumaVariance: Double {
        let count = width * height
        guard count > 0 else { return 0 }
        var sum = 0.0
        var squares = 0.0
        for index in 0..<count {
            let y =
                0.299 * Double(rgb[3 * index]) + 0.587 * Double(rgb[3 * index + 1]) + 0.114 * Double(rgb[3 * index + 2])
            sum += y
            squares += y * y
        }
        let mean = sum / Double(count)
        return max(0, squares / Double(count) - mean * mean)
    }

    /// The picture turned upright by EXIF orientation 2…8 (1 and anything else: unchanged).
    package func oriented(_ orientation: Int) -> Thumbnail {
        guard (2...8).contains(orientation) else { return self }
        let swap = (5...8).contains(orientation)
        let outWidth = swap ? height : width
        let outHeight = swap ? width : height
        var out = [UInt8](repeating: 0, count: rgb.count)
        for y in 0..<outHeight {
            for x in 0..<outWidth {
                let (sx, sy) = Self.source(orientation, x: x, y: y, width: width, height: height)
                let from = 3 * (sy * width + sx)
                let to = 3 * (y * outWidth + x)
                out[to] = rgb[from]
                out[to + 1] = rgb[from + 1]
                out[to + 2] = rgb[from + 2]
            }
        }
        return Thumbnail(width: outWidth, height: outHeight, rgb: out)
    }

    /// The source pixel an output pixel of orientation `orientation` takes (EXIF's eight cases).
    private static func source(_ orientation: Int, x: Int, y: Int, width w: Int, height h: Int) -> (Int, Int) {
        switch orientation {
        case 2: (w - 1 - x, y)
        case 3: (w - 1 - x, h - 1 - y)
        case 4: (x, h - 1 - y)
        case 5: (y, x)
        case 6: (y, h - 1 - x)
        case 7: (w - 1 - y, h - 1 - x)
        case 8: (w - 1 - y, x)
        default: (x, y)
        }
    }

    /// The EXIF orientation that turns a video upright given its display-matrix rotation (degrees
    /// counter-clockwise, as ffprobe prints it): 90 → 8 (turn 90° clockwise… as players do), 180 → 3, 270 → 6.
    package static func orientation(forRotation degrees: Double) -> Int {
        var turn = Int((degrees / 90).rounded()) % 4
        if turn < 0 { turn += 4 }
        return [1, 8, 3, 6][turn]
    }

    /// The thumbnail as a baseline JPEG (TurboJPEG: RGB → 4:2:0 planes → entropy coding).
    package func jpeg(quality: Int = 70) throws -> [UInt8] {
        let image = PlanarImage(packedRGB: rgb, width: width, height: height, stride: width * 3)
        let compressor = try TurboJPEGCompressor()
        let planes = try compressor.planes(from: image, subsampling: .s420)
        return try compressor.compress(planes, quality: quality, progressive: false)
    }
}
