import NativeFFmpeg

/// The poster of a video: the frame at a given time, or else the first frame that is neither black nor blurred.
/// Frames are judged a few times a second on a small picture (mean luma for black, variance of the Laplacian for
/// blur); the frame kept so far is held as a reference to its decoded buffers (one picture), and only the chosen
/// one is scaled to full size and compressed, once, at the end.
package final class PosterPicker: FrameTap {
    package struct Settings: Sendable {
        /// Seconds: the first frame at or after this time; nil: the first good frame.
        package var at: Double?
        /// Longest side of the poster (`Int.max`: the video's own size).
        package var maxSide = Int.max
        package var still: StillSettings

        package init(at: Double?, maxSide: Int = Int.max, still: StillSettings) {
            self.at = at
            self.maxSide = maxSide
            self.still = still
        }
    }

    /// What the poster is: its encoded bytes (JPEG or WebP), size and the time of its frame.
    package struct Poster: Sendable {
        package var bytes: [UInt8]
        package var width: Int
        package var height: Int
        package var time: Double
        /// False when no frame passed the black/blur test and the best one was taken.
        package var clean: Bool
    }

    /// Under this mean luma (0…255) a frame counts as black.
    package static let blackLuma = 24.0
    /// Under this variance of the Laplacian (on the judging picture) a frame counts as blurred or flat.
    package static let blurredSharpness = 60.0
    /// Frames judged per second of video in the `at`-less search.
    static let judgedPerSecond = 4.0
    /// The long side of the picture a frame is judged on.
    static let judgingSide = 160

    let settings: Settings
    private let kept: MediaFrame
    private var keptTime = 0.0
    private var keptScore = -1.0
    private var decided = false
    private var nextJudged = 0.0
    private let judging: FramePictures

    package init(_ settings: Settings) throws {
        self.settings = settings
        kept = try MediaFrame()
        judging = FramePictures(side: Self.judgingSide, rotation: 0)
    }

    package var isSatisfied: Bool { decided }

    package func take(_ frame: MediaFrame, seconds: Double) throws {
        guard !decided else { return }
        if let at = settings.at {
            // Every frame up to the time is held (by reference) so a clip shorter than `at` gives its last frame.
            try keep(frame, seconds: seconds, score: 0)
            decided = seconds >= at - 0.0005
            return
        }
        guard seconds >= nextJudged || !kept.hasPicture else { return }
        nextJudged = seconds + 1 / Self.judgedPerSecond
        let picture = try judging.picture(of: frame)
        let (mean, sharpness) = (picture.lumaMean, picture.sharpness)
        let clean = mean >= Self.blackLuma && sharpness >= Self.blurredSharpness
        // The fallback, when no frame is clean: the sharpest bright-enough one, else the brightest.
        let score = clean ? .infinity : mean >= Self.blackLuma ? 1000 + sharpness : mean
        if score > keptScore { try keep(frame, seconds: seconds, score: score) }
        decided = clean
    }

    private func keep(_ frame: MediaFrame, seconds: Double, score: Double) throws {
        try kept.keep(frame)
        keptTime = seconds
        keptScore = score
    }

    /// The chosen frame, upright, encoded as `settings.still` says; nil when the stream gave no frame at all.
    package func poster() throws -> Poster? {
        guard kept.hasPicture else { return nil }
        let picture = try FramePictures(side: settings.maxSide, rotation: settings.still.rotation).picture(of: kept)
        kept.unref()
        return Poster(
            bytes: try settings.still.encoding.encode(picture), width: picture.width, height: picture.height,
            time: keptTime,
            clean: settings.at != nil || keptScore == .infinity)
    }
}
