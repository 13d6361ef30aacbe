import NativeFFmpeg

extension MediaTranscoder {
    /// Hands a decoded frame to the taps still wanting frames, before the proxy scales or drops it.
    func tap(_ frame: MediaFrame, timeBase: (num: Int32, den: Int32)) throws {
        guard !frameTaps.isEmpty else { return }
        let seconds = frame.bestEffortTimestamp.map { FrameDecodePass.seconds($0, timeBase) } ?? 0
        for tap in frameTaps where !tap.isSatisfied {
            do {
                try tap.take(frame, seconds: seconds)
            } catch let error as TranscodeError {
                throw error
            } catch {
                throw TranscodeError(.encode, "a frame for another output: \(error)")
            }
        }
    }
}
