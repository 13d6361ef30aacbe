internal import CFFmpeg

extension MediaFrame {
    /// An audio frame's sample rate (at least 1, so a damaged frame never divides by zero).
    package var audioSampleRate: Double { Double(max(1, pointer.pointee.sample_rate)) }

    /// The peak of each sample of an audio frame: the loudest channel's absolute value, 0…1 (a full-scale float
    /// sample may exceed 1), in any of FFmpeg's sample formats, planar or packed; empty for a frame without samples.
    package func samplePeaks() -> [Float] {
        let raw = pointer.pointee
        let count = Int(raw.nb_samples)
        let channels = Int(max(1, raw.ch_layout.nb_channels))
        guard count > 0, let data = raw.extended_data else { return [] }
        let format = AVSampleFormat(rawValue: raw.format)
        let planar = av_sample_fmt_is_planar(format) != 0
        var peaks = [Float](repeating: 0, count: count)
        for index in 0..<count {
            var peak: Float = 0
            for channel in 0..<channels {
                let plane = planar ? channel : 0
                let offset = planar ? index : index * channels + channel
                guard let base = data[plane] else { continue }
                peak = max(peak, Self.sample(base, offset, format))
            }
            peaks[index] = peak
        }
        return peaks
    }

    /// The absolute value of one sample, 0…1, in any of FFmpeg's sample formats.
    private static func sample(_ base: UnsafeMutablePointer<UInt8>, _ offset: Int, _ format: AVSampleFormat) -> Float {
        let raw = UnsafeRawPointer(base)
        switch av_get_packed_sample_fmt(format) {
        case AV_SAMPLE_FMT_FLT: return abs(raw.load(fromByteOffset: offset * 4, as: Float.self))
        case AV_SAMPLE_FMT_DBL: return Float(abs(raw.load(fromByteOffset: offset * 8, as: Double.self)))
        case AV_SAMPLE_FMT_S16: return Float(abs(Int32(raw.load(fromByteOffset: offset * 2, as: Int16.self)))) / 32768
        case AV_SAMPLE_FMT_S32:
            return Float(abs(Int64(raw.load(fromByteOffset: offset * 4, as: Int32.self)))) / 2_147_483_648
        case AV_SAMPLE_FMT_U8: return Float(abs(Int(raw.load(fromByteOffset: offset, as: UInt8.self)) - 128)) / 128
        default: return 0
        }
    }
}
