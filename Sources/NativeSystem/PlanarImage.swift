/// How the bytes of a `PlanarImage` are arranged.
package enum PixelLayout: Sendable, Hashable {
    /// Full-range BT.601 Y, Cb, Cr planes (what JPEG stores), one byte per sample.
    case yuv(ChromaSubsampling)
    /// One plane of packed R, G, B bytes.
    case rgb24
    /// One plane of packed R, G, B, A bytes (straight alpha).
    case rgba
}

/// Where one plane lives in `PlanarImage.storage`. `width`/`height` are the valid samples; the padded size is what
/// TurboJPEG reads and writes (whole MCUs).
package struct PlaneGeometry: Sendable, Hashable {
    package var offset: Int
    /// Bytes from one row to the next.
    package var stride: Int
    package var width: Int
    package var height: Int
    package var paddedWidth: Int
    package var paddedHeight: Int
}

/// A decoded picture in one contiguous Swift-owned buffer; C functions only borrow it inside closures.
package struct PlanarImage: Sendable {
    package var layout: PixelLayout
    package var width: Int
    package var height: Int
    package var planes: [PlaneGeometry]
    package var storage: [UInt8]

    package init(layout: PixelLayout, width: Int, height: Int, planes: [PlaneGeometry], byteCount: Int) {
        self.layout = layout
        self.width = width
        self.height = height
        self.planes = planes
        self.storage = [UInt8](repeating: 0, count: byteCount)
    }

    /// Wraps packed RGB rows already in memory (libheif's output, with its stride) without copying them again.
    package init(packedRGB storage: [UInt8], width: Int, height: Int, stride: Int) {
        self.layout = .rgb24
        self.width = width
        self.height = height
        self.planes = [
            PlaneGeometry(
                offset: 0, stride: stride, width: width * 3, height: height, paddedWidth: width * 3,
                paddedHeight: height)
        ]
        self.storage = storage
    }

    /// A packed RGB or RGBA image with rows aligned to 32 bytes.
    package init(packedWidth width: Int, height: Int, alpha: Bool) {
        let bytesPerRow = width * (alpha ? 4 : 3)
        let stride = (bytesPerRow + 31) & ~31
        let plane = PlaneGeometry(
            offset: 0, stride: stride, width: bytesPerRow, height: height, paddedWidth: bytesPerRow,
            paddedHeight: height)
        self.init(
            layout: alpha ? .rgba : .rgb24, width: width, height: height, planes: [plane], byteCount: stride * height)
    }

    /// True when EXIF orientation `orientation` (5…8) swaps width and height.
    package static func swapsAxes(_ orientation: Int) -> Bool { (5...8).contains(orientation) }

    /// Applies EXIF orientation 2…8 to a planar YCbCr image, so the pixels are upright and the file can say
    /// orientation 1. Each plane is transformed on its own; for 90° turns the subsampling is transposed (4:2:2
    /// becomes 4:4:0), which callers avoid by converting to the transposed layout first.
    package func oriented(_ orientation: Int) -> PlanarImage {
        guard (2...8).contains(orientation), case .yuv(let subsampling) = layout else { return self }
        let swap = Self.swapsAxes(orientation)
        let outputSubsampling = swap ? (subsampling.transposed ?? subsampling) : subsampling
        var output = PlanarImage(
            yuvWidth: swap ? height : width, height: swap ? width : height, subsampling: outputSubsampling)
        let sourcePlanes = planes
        let targetPlanes = output.planes
        storage.withUnsafeBufferPointer { source in
            output.storage.withUnsafeMutableBufferPointer { target in
                guard let sourceBase = source.baseAddress, let targetBase = target.baseAddress else { return }
                for (from, to) in zip(sourcePlanes, targetPlanes) {
                    Self.transform(
                        orientation, from: sourceBase + from.offset, geometry: from, to: targetBase + to.offset,
                        stride: to.stride)
                }
            }
        }
        output.replicateEdges()
        return output
    }

    /// Writes plane `from` into `to` transformed: destination (x, y) takes source sample `map(x, y)`.
    private static func transform(
        _ orientation: Int, from source: UnsafePointer<UInt8>, geometry: PlaneGeometry,
        to target: UnsafeMutablePointer<UInt8>, stride targetStride: Int
    ) {
        let w = geometry.width
        let h = geometry.height
        let s = geometry.stride
        let swap = swapsAxes(orientation)
        let outWidth = swap ? h : w
        let outHeight = swap ? w : h
        if swap {
            // A 90° turn reads the source down its columns: walk the output in 64×64 tiles so the source rows a
            // tile touches stay in cache (a plain row-by-row loop runs at a fraction of the speed on 12 MP).
            let tile = 64
            for tileY in stride(from: 0, to: outHeight, by: tile) {
                for tileX in stride(from: 0, to: outWidth, by: tile) {
                    let endX = min(tileX + tile, outWidth)
                    for y in tileY..<min(tileY + tile, outHeight) {
                        let row = target + y * targetStride
                        switch orientation {
                        case 5: for x in tileX..<endX { row[x] = source[x * s + y] }
                        case 6: for x in tileX..<endX { row[x] = source[(h - 1 - x) * s + y] }
                        case 7: for x in tileX..<endX { row[x] = source[(h - 1 - x) * s + (w - 1 - y)] }
                        default: for x in tileX..<endX { row[x] = source[x * s + (w - 1 - y)] }
                        }
                    }
                }
            }
            return
        }
        for y in 0..<outHeight {
            let row = target + y * targetStride
            switch orientation {
            case 2:
                let sourceRow = source + y * s
                for x in 0..<outWidth { row[x] = sourceRow[w - 1 - x] }
            case 3:
                let sourceRow = source + (h - 1 - y) * s
                for x in 0..<outWidth { row[x] = sourceRow[w - 1 - x] }
            case 4:
                row.update(from: source + (h - 1 - y) * s, count: w)
            default:
                row.update(from: source + y * s, count: w)
            }
        }
    }

    /// Fills each plane's MCU padding by repeating the last valid column and row: the encoder compresses those
    /// samples too, and a copy of the edge costs fewer bits and bleeds no stray colour into the visible block.
    package mutating func replicateEdges() {
        let geometry = planes
        storage.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            for plane in geometry where plane.width > 0 && plane.height > 0 {
                let start = base + plane.offset
                if plane.paddedWidth > plane.width {
                    for y in 0..<plane.height {
                        let row = start + y * plane.stride
                        let edge = row[plane.width - 1]
                        (row + plane.width).update(repeating: edge, count: plane.paddedWidth - plane.width)
                    }
                }
                if plane.paddedHeight > plane.height {
                    let last = start + (plane.height - 1) * plane.stride
                    for y in plane.height..<plane.paddedHeight {
                        (start + y * plane.stride).update(from: last, count: plane.paddedWidth)
                    }
                }
            }
        }
    }

    /// Composites straight-alpha RGBA over white into RGB: a transparent PNG would otherwise turn black (or show
    /// whatever colour hides under alpha 0), since JPEG has no alpha.
    package func compositedOverWhite() -> PlanarImage {
        guard layout == .rgba, let plane = planes.first else { return self }
        var output = PlanarImage(packedWidth: width, height: height, alpha: false)
        let targetStride = output.planes[0].stride
        let pixels = width
        storage.withUnsafeBufferPointer { source in
            output.storage.withUnsafeMutableBufferPointer { target in
                guard let sourceBase = source.baseAddress, let targetBase = target.baseAddress else { return }
                for y in 0..<height {
                    let from = sourceBase + plane.offset + y * plane.stride
                    let to = targetBase + y * targetStride
                    for x in 0..<pixels {
                        let alpha = UInt32(from[4 * x + 3])
                        let inverse = 255 - alpha
                        for channel in 0..<3 {
                            let value = UInt32(from[4 * x + channel]) * alpha + 255 * inverse
                            to[3 * x + channel] = UInt8((value + 127) / 255)
                        }
                    }
                }
            }
        }
        return output
    }
}

/// Chroma subsampling of a JPEG (`TJSAMP_*`) and of planar YCbCr images in memory.
package enum ChromaSubsampling: Sendable, Hashable, CustomStringConvertible {
    case s444, s422, s420, s440, s411, gray

    /// Horizontal and vertical chroma decimation factors.
    package var factors: (horizontal: Int, vertical: Int) {
        switch self {
        case .s444, .gray: (1, 1)
        case .s422: (2, 1)
        case .s420: (2, 2)
        case .s440: (1, 2)
        case .s411: (4, 1)
        }
    }

    /// The layout of the same planes after a transpose (a 90° rotation swaps the axes: 4:2:2 becomes 4:4:0).
    package var transposed: ChromaSubsampling? {
        switch self {
        case .s444, .s420, .gray: self
        case .s422: .s440
        case .s440: .s422
        case .s411: nil
        }
    }

    package var componentCount: Int { self == .gray ? 1 : 3 }

    package var description: String {
        switch self {
        case .s444: "4:4:4"
        case .s422: "4:2:2"
        case .s420: "4:2:0"
        case .s440: "4:4:0"
        case .s411: "4:1:1"
        case .gray: "grayscale"
        }
    }
}

extension PlanarImage {
    /// Planes laid out as TurboJPEG expects them: each plane padded to whole MCUs (`tjPlaneWidth`/`tjPlaneHeight`)
    /// so the encoder never reads past the valid samples; rows aligned to 32 bytes for swscale's SIMD paths.
    package init(yuvWidth width: Int, height: Int, subsampling: ChromaSubsampling) {
        var planes: [PlaneGeometry] = []
        var offset = 0
        let (horizontal, vertical) = subsampling.factors
        for component in 0..<subsampling.componentCount {
            // `tjPlaneWidth`/`tjPlaneHeight`: the size rounded up to whole chroma samples, divided for chroma.
            let roundedWidth = (width + horizontal - 1) / horizontal * horizontal
            let roundedHeight = (height + vertical - 1) / vertical * vertical
            let paddedWidth = component == 0 ? roundedWidth : roundedWidth / horizontal
            let paddedHeight = component == 0 ? roundedHeight : roundedHeight / vertical
            let stride = (paddedWidth + 31) & ~31
            let validWidth = component == 0 ? width : (width + horizontal - 1) / horizontal
            let validHeight = component == 0 ? height : (height + vertical - 1) / vertical
            planes.append(
                PlaneGeometry(
                    offset: offset, stride: stride, width: validWidth, height: validHeight,
                    paddedWidth: paddedWidth, paddedHeight: paddedHeight))
            offset += stride * paddedHeight
            offset = (offset + 31) & ~31
        }
        self.init(layout: .yuv(subsampling), width: width, height: height, planes: planes, byteCount: offset)
    }
}
