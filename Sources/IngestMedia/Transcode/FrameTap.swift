import NativeFFmpeg

/// A consumer of decoded video frames in a shared pass (a poster picker, a thumbnail sheet): several outputs of one
/// recording read one demux and decode pass instead of one each. The pass (a `MediaTranscoder` making a proxy, or
/// `FrameDecodePass` when no proxy is made) hands every decoded frame of the video stream to each tap, in
/// presentation order, before the proxy scales or encodes it.
package protocol FrameTap: AnyObject {
    /// Looks at one decoded frame at `seconds` from the stream's start. The frame is reused after the call: a tap
    /// that needs it later keeps a reference (`MediaFrame.keep`), never the pointer.
    func take(_ frame: MediaFrame, seconds: Double) throws
    /// True once the tap needs no more frames (a poster found): a pass with only satisfied taps may stop reading.
    var isSatisfied: Bool { get }
}

/// Pictures of decoded frames as packed RGB at a bounded size, upright: the scaler is kept while the frames keep
/// their size and format (one `sws_getContext` per stream, not per frame).
package final class FramePictures {
    private var scaler: FrameRGBScaler?
    private var source: (width: Int32, height: Int32, format: Int32) = (0, 0, -1)
    /// The long side of the pictures (`Int.max`: the frame's own size).
    let side: Int
    /// EXIF orientation that turns the stream's pictures upright (from the display-matrix rotation).
    let orientation: Int

    package init(side: Int, rotation: Double) {
        self.side = side
        orientation = Thumbnail.orientation(forRotation: rotation)
    }

    /// `frame` as an upright picture at most `side` on its long side.
    package func picture(of frame: MediaFrame) throws -> Thumbnail {
        let geometry = frame.pictureGeometry
        if scaler == nil || geometry != source {
            scaler = try FrameRGBScaler(frame: frame, within: side)
            source = geometry
        }
        guard let scaler else { throw FFmpegError(call: "sws_getContext", code: .ioError) }
        return try scaler.picture(of: frame).oriented(orientation)
    }
}

extension Thumbnail {
    /// Mean luma (BT.601, 0…255): under `blackLuma` the picture is black or nearly so (a fade, a lens cap).
    package var lumaMean: Double {
        let count = width * height
        guard count > 0 else { return 0 }
        var sum = 0.0
        for index in 0..<count { sum += luma(index) }
        return sum / Double(count)
    }

    /// Variance of the 4-neighbour Laplacian of the luma: how much fine detail the picture has. A picture out of
    /// focus or smeared by motion has little, a sharp one a lot (the usual variance-of-Laplacian focus measure).
    package var sharpness: Double {
        guard width > 2, height > 2 else { return 0 }
        var sum = 0.0
        var squares = 0.0
        for y in 1..<(height - 1) {
            for x in 1..<(width - 1) {
                let index = y * width + x
                let value =
                    luma(index - 1) + luma(index + 1) + luma(index - width) + luma(index + width) - 4 * luma(index)
                sum += value
                squares += value * value
            }
        }
        let count = Double((width - 2) * (height - 2))
        let mean = sum / count
        return max(0, squares / count - mean * mean)
    }

    private func luma(_ index: Int) -> Double {
        0.299 * Double(rgb[3 * index]) + 0.587 * Double(rgb[3 * index + 1]) + 0.114 * Double(rgb[3 * index + 2])
    }
}
