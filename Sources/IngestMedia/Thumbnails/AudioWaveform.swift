import NativeFFmpeg

/// An audio file's level strip for the contact sheet: the peak (0…1, the loudest sample of any channel) of each of
/// `buckets` equal slices of the duration. A recording up to `fullDecodeSeconds` long is decoded whole; a longer one
/// is sampled: a seek to each slice and a quarter of a second decoded there, so a two-hour recording costs what
/// a short one does. Holds one decoded frame at a time; the deadline bounds the whole job.
package enum AudioWaveform {
    package struct Result: Sendable, Equatable {
        package var peaks: [Float]
        package var duration: Double?
    }

    package static let fullDecodeSeconds = 600.0
    static let sampledSeconds = 0.25

    package static func peaks(path: String, demuxer: Demuxer, buckets: Int = 120, timeout: Double = 10) throws -> Result
    {
        let input = try MediaInput(path: path, demuxer: demuxer, limits: MediaInputLimits(timeout: timeout))
        guard let stream = input.streams.first(where: { $0.codecType == "audio" }) else {
            throw StillThumbnailer.Failure(description: "no audio stream")
        }
        let decoder = try MediaDecoder(input: input, stream: stream.index, strict: false, threads: 1)
        let timeBase = input.timeBase(ofStream: stream.index) ?? (1, 1)
        guard let duration = input.duration ?? stream.duration, duration > 0 else {
            throw StillThumbnailer.Failure(description: "the duration is unknown")
        }
        var peaks = [Float](repeating: 0, count: max(1, buckets))
        let reader = try PeakReader(
            input: input, decoder: decoder, stream: stream.index, timeBase: timeBase, duration: duration,
            buckets: peaks.count)
        if duration <= fullDecodeSeconds {
            try reader.read(into: &peaks, until: .infinity)
        } else {
            for bucket in 0..<peaks.count {
                let start = duration * Double(bucket) / Double(peaks.count)
                guard input.seek(stream: stream.index, seconds: start, timeBase: timeBase) else { break }
                decoder.flush()
                try reader.read(into: &peaks, until: start + sampledSeconds)
            }
        }
        return Result(peaks: peaks, duration: duration)
    }
}

/// Decodes packets of one audio stream and folds each frame's samples into the peak of its time slice.
private final class PeakReader {
    let input: MediaInput
    let decoder: MediaDecoder
    let stream: Int
    let timeBase: (num: Int32, den: Int32)
    let duration: Double
    let buckets: Int
    let packet: MediaPacket
    let frame: MediaFrame

    init(
        input: MediaInput, decoder: MediaDecoder, stream: Int, timeBase: (num: Int32, den: Int32), duration: Double,
        buckets: Int
    ) throws {
        (self.input, self.decoder, self.stream, self.timeBase) = (input, decoder, stream, timeBase)
        (self.duration, self.buckets) = (duration, buckets)
        packet = try MediaPacket()
        frame = try MediaFrame()
    }

    /// Reads until the end of the stream or the first frame starting after `end` seconds.
    func read(into peaks: inout [Float], until end: Double) throws {
        var next = 0.0
        while true {
            let more = try input.readPacket(into: packet)
            if more && packet.streamIndex != stream { continue }
            _ = try? decoder.send(more ? packet : nil)
            while (try? decoder.receive(frame)) == .ready {
                let start =
                    frame.bestEffortTimestamp.map {
                        Double($0) * Double(timeBase.num) / Double(max(1, timeBase.den))
                    } ?? next
                next = fold(frame, startingAt: start, into: &peaks)
                if start > end { return }
            }
            if !more { return }
        }
    }

    /// Folds one frame in; returns the time just after it.
    private func fold(_ frame: MediaFrame, startingAt start: Double, into peaks: inout [Float]) -> Double {
        let rate = frame.audioSampleRate
        let framePeaks = frame.samplePeaks()
        guard !framePeaks.isEmpty else { return start }
        for (index, peak) in framePeaks.enumerated() {
            let time = start + Double(index) / rate
            let bucket = min(buckets - 1, max(0, Int(time / duration * Double(buckets))))
            if peak > peaks[bucket] { peaks[bucket] = min(1, peak) }
        }
        return start + Double(framePeaks.count) / rate
    }
}
