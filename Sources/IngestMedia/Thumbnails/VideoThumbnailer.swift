import NativeFFmpeg

/// A video's thumbnail: a representative frame, not the black first frame many clips open with. It seeks to a few
/// points (15 %, 40 %, 65 % of the duration), decodes the first frame at or after each, and keeps the one whose
/// luma varies most; the display-matrix rotation is applied so a portrait clip shows upright. Opens the file as the
/// probe does (allow-listed demuxer, one open, a deadline over the whole job); holds one decoded frame at a time.
package enum VideoThumbnailer {
    package struct Result: Sendable {
        package var thumbnail: Thumbnail
        /// Seconds, from the container (nil when it does not say).
        package var duration: Double?
        /// Where the chosen frame sits, in seconds.
        package var time: Double
    }

    /// Where the candidate frames are taken, as fractions of the duration.
    package static let positions = [0.15, 0.40, 0.65]
    /// A frame this varied is clearly a picture: the remaining candidates are not decoded.
    static let clearlyAPicture = 2500.0
    /// Packets read after a seek before giving up on reaching the target (a long GOP).
    static let packetsPerCandidate = 1500

    package static func thumbnail(path: String, demuxer: Demuxer, timeout: Double = 10) throws -> Result {
        let input = try MediaInput(path: path, demuxer: demuxer, limits: MediaInputLimits(timeout: timeout))
        guard let stream = input.streams.first(where: { $0.codecType == "video" && ($0.width ?? 0) > 0 }) else {
            throw StillThumbnailer.Failure(description: "no video stream")
        }
        let decoder = try MediaDecoder(input: input, stream: stream.index, strict: false, threads: 1)
        let timeBase = input.timeBase(ofStream: stream.index) ?? (1, 1)
        let duration = input.duration ?? stream.duration
        let targets = (duration ?? 0) > 0.5 ? positions.map { $0 * (duration ?? 0) } : [0]
        var best: (thumbnail: Thumbnail, variance: Double, time: Double)?
        let packet = try MediaPacket()
        let frame = try MediaFrame()
        for target in targets {
            if target > 0 {
                guard input.seek(stream: stream.index, seconds: target, timeBase: timeBase) else { break }
                decoder.flush()
            }
            guard
                let time = try decodeFrame(
                    at: target, input: input, decoder: decoder, stream: stream.index, timeBase: timeBase,
                    packet: packet, frame: frame)
            else { continue }
            let picture = try FrameRGBScaler.thumbnail(of: frame)
            let variance = picture.lumaVariance
            if variance > best?.variance ?? -1 { best = (picture, variance, time) }
            if variance >= clearlyAPicture { break }
        }
        guard let best else { throw StillThumbnailer.Failure(description: "no frame could be decoded") }
        let upright = best.thumbnail.oriented(Thumbnail.orientation(forRotation: stream.rotation ?? 0))
        return Result(thumbnail: upright, duration: duration, time: best.time)
    }

    /// Decodes into `frame` the first frame at or after `target` seconds; returns its time, nil when the stream
    /// ended first.
    private static func decodeFrame(
        at target: Double, input: MediaInput, decoder: MediaDecoder, stream: Int, timeBase: (num: Int32, den: Int32),
        packet: MediaPacket, frame: MediaFrame
    ) throws -> Double? {
        var packets = 0
        func seconds(_ frame: MediaFrame) -> Double {
            guard let pts = frame.bestEffortTimestamp, timeBase.den > 0 else { return target }
            return Double(pts) * Double(timeBase.num) / Double(timeBase.den)
        }
        while packets < packetsPerCandidate {
            let more = try input.readPacket(into: packet)
            if more && packet.streamIndex != stream { continue }
            packets += 1
            _ = try? decoder.send(more ? packet : nil)
            while try decoder.receive(frame) == .ready {
                let time = seconds(frame)
                // A frame within half a frame's time of the target is the target's frame.
                if time >= target - 0.02 { return time }
                if packets >= packetsPerCandidate { return time }
            }
            if !more { break }
        }
        return nil
    }
}

extension FrameRGBScaler {
    /// A scaler to pictures at most `side` on their long side (the contact sheet's `Thumbnail.maxSide` unless
    /// told), at the frame's display aspect.
    convenience init(frame: MediaFrame, within side: Int = Thumbnail.maxSide) throws {
        let display = frame.displaySize
        let size = Thumbnail.fitting(width: max(1, display.width), height: display.height, within: side)
        try self.init(frame: frame, width: size.width, height: size.height)
    }

    /// The frame as a thumbnail-sized picture.
    func picture(of frame: MediaFrame) throws -> Thumbnail {
        let (rows, stride) = try scale(frame)
        return Thumbnail(width: width, height: height, stride: stride, rows: rows)
    }

    /// `frame` at thumbnail size, with a scaler made for it.
    static func thumbnail(of frame: MediaFrame) throws -> Thumbnail {
        try FrameRGBScaler(frame: frame).picture(of: frame)
    }
}
