import NativeFFmpeg

/// What one pass over a recording did: the counters that show one demux and one decode served every output.
package struct FramePassCounts: Sendable, Equatable {
    /// Packets the demuxer read (every stream's).
    package var packetsRead = 0
    /// Video frames the decoder gave.
    package var videoFramesDecoded = 0

    package init(packetsRead: Int = 0, videoFramesDecoded: Int = 0) {
        self.packetsRead = packetsRead
        self.videoFramesDecoded = videoFramesDecoded
    }
}

/// Demux and decode the video stream once, handing every frame to the taps (poster, sheet), when no proxy is
/// encoded in the same pass (then `MediaTranscoder` feeds the taps). Stops reading once every tap is satisfied.
/// One packet and one decoded frame in memory at a time, plus what the taps keep.
package final class FrameDecodePass {
    private let input: MediaInput
    private let stream: Int
    private let taps: [any FrameTap]
    private let strict: Bool
    private let shouldStop: (() -> Bool)?

    package init(input: MediaInput, stream: Int, taps: [any FrameTap], strict: Bool, shouldStop: (() -> Bool)? = nil) {
        self.input = input
        self.stream = stream
        self.taps = taps
        self.strict = strict
        self.shouldStop = shouldStop
    }

    /// Runs the pass; throws `TranscodeError` (`corrupt` for a damaged stream with `strict`, `interrupted`).
    package func run() throws -> FramePassCounts {
        input.clearDeadline()
        let (counts, _) = try FFmpegLog.capturingErrors { try self.pass() }
        return counts
    }

    private func pass() throws -> FramePassCounts {
        let decoder: MediaDecoder
        do {
            decoder = try MediaDecoder(input: input, stream: stream, strict: strict)
        } catch let error as FFmpegError {
            throw TranscodeError(error.code == .decoderNotFound ? .unsupported : .corrupt, "\(error)")
        }
        let timeBase = input.timeBase(ofStream: stream) ?? (1, 90000)
        let packet = try MediaPacket()
        let frame = try MediaFrame()
        var counts = FramePassCounts()
        var more = true
        while more && !taps.allSatisfy(\.isSatisfied) {
            do {
                more = try input.readPacket(into: packet)
            } catch let error as MediaInputError {
                throw TranscodeError(.corrupt, "the demuxer cannot read the file: \(error)")
            }
            if more { counts.packetsRead += 1 }
            if counts.packetsRead % 16 == 0, let shouldStop, shouldStop() {
                throw TranscodeError(.interrupted, "stopped after \(counts.packetsRead) packets")
            }
            if more && packet.streamIndex != stream {
                packet.unref()
                continue
            }
            try decode(more ? packet : nil, decoder: decoder, into: frame, timeBase: timeBase, counts: &counts)
            packet.unref()
        }
        return counts
    }

    /// Sends `packet` (nil: drain) and hands every frame that comes out to the taps; a full decoder is emptied and
    /// the packet sent again. Without `strict` a packet the decoder rejects is dropped.
    private func decode(
        _ packet: MediaPacket?, decoder: MediaDecoder, into frame: MediaFrame, timeBase: (num: Int32, den: Int32),
        counts: inout FramePassCounts
    ) throws {
        var accepted = false
        repeat {
            do {
                accepted = try decoder.send(packet)
                while try decoder.receive(frame) == .ready {
                    counts.videoFramesDecoded += 1
                    let seconds = frame.bestEffortTimestamp.map { Self.seconds($0, timeBase) } ?? 0
                    for tap in taps where !tap.isSatisfied { try tap.take(frame, seconds: seconds) }
                    frame.unref()
                }
            } catch let error as FFmpegError {
                guard !strict else { throw TranscodeError(.corrupt, "\(decoder.codecName) decoder: \(error)") }
                accepted = true  // The damaged packet is dropped; the taps see the frames around it.
            }
        } while !accepted
    }

    /// A timestamp in seconds from the stream's time base.
    package static func seconds(_ pts: Int64, _ timeBase: (num: Int32, den: Int32)) -> Double {
        guard timeBase.den > 0 else { return 0 }
        return Double(pts) * Double(timeBase.num) / Double(timeBase.den)
    }
}
