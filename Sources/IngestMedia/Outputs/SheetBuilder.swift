import NativeFFmpeg

/// A thumbnail sheet: `count` frames spread evenly over the video (the middle of each of `count` equal spans), each
/// at most `Thumbnail.maxSide` on its long side like the HTML report's cards, laid out left to right, top to bottom
/// in a grid with a thin dark gap. Holds the small tiles only, never a decoded frame.
package final class SheetBuilder: FrameTap {
    package struct Settings: Sendable {
        package var count: Int
        /// Tiles per row; nil: as square a grid as the count allows.
        package var columns: Int?
        package var tileSide = Thumbnail.maxSide
        package var still: StillSettings

        package init(count: Int, columns: Int? = nil, still: StillSettings) {
            self.count = count
            self.columns = columns
            self.still = still
        }
    }

    package struct Sheet: Sendable {
        package var bytes: [UInt8]
        package var width: Int
        package var height: Int
        package var tiles: Int
        package var columns: Int
    }

    /// The gap between tiles and around them, in pixels, and its grey.
    static let gap = 4
    static let background: UInt8 = 0x22

    let settings: Settings
    private let targets: [Double]
    private var tiles: [Thumbnail] = []
    private var last: Thumbnail?
    private let pictures: FramePictures

    /// `duration`: the video's length in seconds, which places the frames.
    package init(_ settings: Settings, duration: Double) {
        self.settings = settings
        let count = max(1, settings.count)
        let span = max(duration, 0) / Double(count)
        targets = (0..<count).map { (Double($0) + 0.5) * span }
        pictures = FramePictures(side: settings.tileSide, rotation: settings.still.rotation)
    }

    package var isSatisfied: Bool { tiles.count == targets.count }

    package func take(_ frame: MediaFrame, seconds: Double) throws {
        guard tiles.count < targets.count, seconds >= targets[tiles.count] - 0.0005 else { return }
        let picture = try pictures.picture(of: frame)
        // One frame fills every target it reaches (a clip with fewer frames than tiles repeats them).
        while tiles.count < targets.count, seconds >= targets[tiles.count] - 0.0005 { tiles.append(picture) }
        last = picture
    }

    /// The grid, encoded as `settings.still` says; tiles the stream ended before repeat the last frame; nil when no
    /// frame came at all.
    package func sheet() throws -> Sheet? {
        guard let filler = last ?? tiles.last else { return nil }
        while tiles.count < targets.count { tiles.append(filler) }
        let columns = min(settings.columns ?? Int(Double(tiles.count).squareRoot().rounded(.up)), tiles.count)
        let rows = (tiles.count + columns - 1) / columns
        let tileWidth = tiles.map(\.width).max() ?? 1
        let tileHeight = tiles.map(\.height).max() ?? 1
        let width = columns * tileWidth + (columns + 1) * Self.gap
        let height = rows * tileHeight + (rows + 1) * Self.gap
        var rgb = [UInt8](repeating: Self.background, count: width * height * 3)
        for (index, tile) in tiles.enumerated() {
            let left = Self.gap + (index % columns) * (tileWidth + Self.gap) + (tileWidth - tile.width) / 2
            let top = Self.gap + (index / columns) * (tileHeight + Self.gap) + (tileHeight - tile.height) / 2
            for y in 0..<tile.height {
                let from = y * tile.width * 3
                let to = ((top + y) * width + left) * 3
                rgb.replaceSubrange(to..<to + tile.width * 3, with: tile.rgb[from..<from + tile.width * 3])
            }
        }
        let bytes = try settings.still.encoding.encode(Thumbnail(width: width, height: height, rgb: rgb))
        return Sheet(bytes: bytes, width: width, height: height, tiles: tiles.count, columns: columns)
    }
}
