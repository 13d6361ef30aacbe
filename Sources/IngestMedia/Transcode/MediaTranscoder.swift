import NativeFFmpeg

/// What to do with the video stream of a transcode.
package enum VideoPlan: Sendable {
    /// Stream copy: packets go to the output as they are (remux).
    case copy
    /// Decode, scale to the settings' size, drop frames above `maxFrameRate`, encode with libx264.
    case encode(VideoEncoderSettings, maxFrameRate: Double?)
}

/// What to do with the audio stream of a transcode.
package enum AudioPlan: Sendable {
    case copy
    /// Decode, resample (libswresample) and encode as AAC.
    case encode(AudioEncoderSettings)
}

/// One transcode job: which input streams, what to do with each, and the output container.
package struct TranscodePlan: Sendable {
    package var container: OutputContainer
    package var faststart: Bool
    package var video: (stream: Int, plan: VideoPlan)?
    package var audio: (stream: Int, plan: AudioPlan)?
    /// `on_decode_error: skip`: a packet the decoder rejects is dropped and counted instead of failing the file.
    package var skipDecodeErrors: Bool
    /// Container metadata written to the output (creation_time, location …).
    package var metadata: [String: String]

    package init(
        container: OutputContainer, faststart: Bool = true, video: (stream: Int, plan: VideoPlan)? = nil,
        audio: (stream: Int, plan: AudioPlan)? = nil, skipDecodeErrors: Bool = false, metadata: [String: String] = [:]
    ) {
        self.container = container
        self.faststart = faststart
        self.video = video
        self.audio = audio
        self.skipDecodeErrors = skipDecodeErrors
        self.metadata = metadata
    }
}

/// What a transcode did.
package struct TranscodeStats: Sendable, Equatable {
    /// Packets the decoders rejected (only with `skipDecodeErrors`; otherwise the first one fails the job).
    package var decodeErrors = 0
    /// The first rejected packet's error text.
    package var firstDecodeError: String?
    package var videoFramesEncoded = 0
    /// Frames left out to stay under `maxFrameRate`.
    package var videoFramesDropped = 0
    package var audioSamplesEncoded = 0
    package var packetsCopied = 0
    /// Packets the demuxer read and video frames the decoder gave: one pass serving several outputs shows here.
    package var packetsRead = 0
    package var videoFramesDecoded = 0

    package init() {}
}

/// Why a transcode failed, in the terms a report needs; `message` keeps FFmpeg's own text and log lines.
package struct TranscodeError: Error, Sendable, CustomStringConvertible {
    package enum Kind: String, Sendable {
        /// No decoder or encoder for the codec, or a container that cannot hold it.
        case unsupported
        /// The input is damaged (demuxer or decoder rejected it).
        case corrupt
        /// Nothing to encode: no frames or no samples.
        case empty
        /// The encoder or resampler failed.
        case encode
        /// Writing the output failed.
        case output
        /// `shouldStop` said so (the run is being stopped): the output is incomplete and must be thrown away.
        case interrupted
    }
    package var kind: Kind
    package var message: String

    package init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    package var description: String { message }
}

/// Demux → decode → scale/resample → encode → mux, one packet and one frame at a time: at most one decoded frame,
/// one scaled frame, one encoder frame of audio and what the codecs themselves buffer (x264's lookahead, decoder
/// threads) are in memory at once, whatever the file's length.
package final class MediaTranscoder {
    private let input: MediaInput
    private let plan: TranscodePlan
    private let progress: ((Int64) -> Void)?
    /// Asked every 16 packets: true ends the job with `TranscodeError.interrupted` (Ctrl-C during a long video).
    private let shouldStop: (() -> Bool)?
    private var stats = TranscodeStats()
    /// Other outputs of the same pass (a poster, a sheet): each decoded video frame goes to them too (`FrameTap`).
    package var frameTaps: [any FrameTap] = []

    package init(
        input: MediaInput, plan: TranscodePlan, progress: ((Int64) -> Void)? = nil, shouldStop: (() -> Bool)? = nil
    ) {
        self.input = input
        self.plan = plan
        self.progress = progress
        self.shouldStop = shouldStop
    }

    /// Writes the output to `path` (a temp file the caller commits or removes). Throws `TranscodeError`.
    package func run(to path: String) throws -> TranscodeStats {
        input.clearDeadline()
        // Every codec's info lines (x264's banner and end statistics) are kept off stderr while the job runs; the
        // codecs are made and freed inside this closure.
        let (result, _) = try FFmpegLog.capturingErrors { try self.runCaptured(to: path) }
        return result
    }

    // MARK: - The pipeline

    /// One stream being decoded and re-encoded.
    private final class EncodeLane {
        let inputIndex: Int
        let outputIndex: Int
        let decoder: MediaDecoder
        let encoder: MediaEncoder
        let inputTimeBase: (num: Int32, den: Int32)
        let frame: MediaFrame
        let converted: MediaFrame
        let packet: MediaPacket
        // Video
        var scaler: ImageScaler?
        var maxFrameRate: Double?
        var nextSlot: Double?
        // Audio
        var resampler: AudioResampler?
        var nextSamplePTS: Int64 = 0

        init(
            inputIndex: Int, outputIndex: Int, decoder: MediaDecoder, encoder: MediaEncoder,
            inputTimeBase: (num: Int32, den: Int32)
        ) throws {
            self.inputIndex = inputIndex
            self.outputIndex = outputIndex
            self.decoder = decoder
            self.encoder = encoder
            self.inputTimeBase = inputTimeBase
            frame = try MediaFrame()
            converted = try MediaFrame()
            packet = try MediaPacket()
        }
    }

    /// Where each input stream goes: copied to an output stream (input index → output index) or through a lane.
    private struct Routes {
        var copies: [Int: Int] = [:]
        var video: EncodeLane?
        var audio: EncodeLane?
    }

    private func runCaptured(to path: String) throws -> TranscodeStats {
        try checkComplete()
        let output: MediaOutput
        do {
            output = try MediaOutput(path: path, container: plan.container)
        } catch let error as FFmpegError {
            throw TranscodeError(.output, "cannot create the output: \(error)")
        }
        var routes = Routes()
        if let (index, videoPlan) = plan.video { try addVideo(index, videoPlan, to: output, routes: &routes) }
        if let (index, audioPlan) = plan.audio { try addAudio(index, audioPlan, to: output, routes: &routes) }
        try outputCall { try output.writeHeader(metadata: plan.metadata, faststart: plan.faststart) }
        try pumpPackets(routes, output: output)
        try flush(routes, output: output)
        try outputCall { try output.finish() }
        return stats
    }

    /// The video stream's output: a copy, or a decoder → H.264 encoder lane.
    private func addVideo(_ index: Int, _ videoPlan: VideoPlan, to output: MediaOutput, routes: inout Routes) throws {
        switch videoPlan {
        case .copy:
            routes.copies[index] = try outputCall { try output.addStream(copying: index, of: input) }
        case .encode(let settings, let maxFrameRate):
            let decoder = try openDecoder(index)
            let timeBase = input.timeBase(ofStream: index) ?? (1, 90000)
            let encoder: MediaEncoder
            do {
                encoder = try MediaEncoder(
                    h264: settings, timeBase: timeBase, matching: decoder, globalHeader: output.wantsGlobalHeader)
            } catch let error as FFmpegError {
                throw TranscodeError(.encode, "cannot open the H.264 encoder: \(error)")
            }
            let outIndex = try outputCall { try output.addStream(encoder: encoder, like: index, of: input) }
            let lane = try EncodeLane(
                inputIndex: index, outputIndex: outIndex, decoder: decoder, encoder: encoder, inputTimeBase: timeBase)
            lane.maxFrameRate = maxFrameRate
            routes.video = lane
        }
    }

    /// The audio stream's output: a copy, or a decoder → AAC encoder lane.
    private func addAudio(_ index: Int, _ audioPlan: AudioPlan, to output: MediaOutput, routes: inout Routes) throws {
        switch audioPlan {
        case .copy:
            routes.copies[index] = try outputCall { try output.addStream(copying: index, of: input) }
        case .encode(let settings):
            let decoder = try openDecoder(index)
            let encoder: MediaEncoder
            do {
                encoder = try MediaEncoder(aac: settings, globalHeader: output.wantsGlobalHeader)
            } catch let error as FFmpegError {
                throw TranscodeError(.encode, "cannot open the AAC encoder: \(error)")
            }
            let outIndex = try outputCall { try output.addStream(encoder: encoder, like: index, of: input) }
            routes.audio = try EncodeLane(
                inputIndex: index, outputIndex: outIndex, decoder: decoder, encoder: encoder,
                inputTimeBase: input.timeBase(ofStream: index) ?? (1, Int32(settings.sampleRate)))
        }
    }

    /// Reads every packet and sends it its way (copied, decoded, or dropped), reporting progress and stopping
    /// when asked.
    private func pumpPackets(_ routes: Routes, output: MediaOutput) throws {
        let packet = try MediaPacket()
        var count = 0
        while try readPacket(packet) {
            count += 1
            stats.packetsRead = count
            if count % 64 == 0 { progress?(input.bytesRead) }
            if count % 16 == 0, let shouldStop, shouldStop() {
                throw TranscodeError(.interrupted, "stopped after \(count) packets")
            }
            let index = packet.streamIndex
            if let outIndex = routes.copies[index], let timeBase = input.timeBase(ofStream: index) {
                try outputCall { try output.write(packet, timeBase: timeBase, stream: outIndex) }
                stats.packetsCopied += 1
            } else if let lane = routes.video, lane.inputIndex == index {
                try decode(packet, lane: lane, output: output, handle: handleVideo)
            } else if let lane = routes.audio, lane.inputIndex == index {
                try decode(packet, lane: lane, output: output, handle: handleAudio)
            }
            packet.unref()
        }
        progress?(input.bytesRead)
    }

    /// Drains the decoders, the resampler and the encoders at the end of the input; a lane that encoded nothing
    /// fails the job.
    private func flush(_ routes: Routes, output: MediaOutput) throws {
        if let lane = routes.video {
            try decode(nil, lane: lane, output: output, handle: handleVideo)
            try encode(nil, lane: lane, output: output)
            if stats.videoFramesEncoded == 0 {
                throw TranscodeError(.empty, "the video stream has no decodable frames")
            }
        }
        if let lane = routes.audio {
            try decode(nil, lane: lane, output: output, handle: handleAudio)
            if let resampler = lane.resampler {
                try encodeCall { try resampler.push(nil) }
                try drainResampler(lane, output: output, partialLast: true)
            }
            try encode(nil, lane: lane, output: output)
            if stats.audioSamplesEncoded == 0 {
                throw TranscodeError(.empty, "the audio stream has no samples (zero duration)")
            }
        }
    }

    // MARK: - Steps

    /// A truncated upload ends the demuxer early with a plain EOF, and a stream copy would then pass it on cut
    /// short. The index tells: samples it lists past the end of the file. Checked before any output is made.
    private func checkComplete() throws {
        for index in [plan.video?.stream, plan.audio?.stream].compactMap({ $0 }) {
            let missing = input.missingBytes(ofStream: index)
            guard missing > 0 else { continue }
            let message = "the file is cut short: stream \(index)'s data runs \(missing) bytes past its end (truncated)"
            guard plan.skipDecodeErrors else { throw TranscodeError(.corrupt, message) }
            stats.decodeErrors += 1
            if stats.firstDecodeError == nil { stats.firstDecodeError = message }
        }
    }

    private func openDecoder(_ index: Int) throws -> MediaDecoder {
        do {
            return try MediaDecoder(input: input, stream: index, strict: !plan.skipDecodeErrors)
        } catch let error as FFmpegError {
            if error.code == .decoderNotFound { throw TranscodeError(.unsupported, error.message) }
            throw TranscodeError(.corrupt, "cannot open the decoder: \(error)")
        }
    }

    private func readPacket(_ packet: MediaPacket) throws -> Bool {
        do {
            return try input.readPacket(into: packet)
        } catch let error as MediaInputError {
            throw TranscodeError(.corrupt, "the demuxer cannot read the file: \(error)")
        }
    }

    /// Sends `packet` (nil: drain) to the lane's decoder and hands every frame that comes out to `handle`. A full
    /// decoder (`EAGAIN` on send) is emptied and the same packet sent again; `EAGAIN`/`EOF` on receive end the
    /// inner loop; only real errors are errors.
    private func decode(
        _ packet: MediaPacket?, lane: EncodeLane, output: MediaOutput,
        handle: (EncodeLane, MediaFrame, MediaOutput) throws -> Void
    ) throws {
        while true {
            let (sent, lines) = FFmpegLog.capturingErrors { Result { try lane.decoder.send(packet) } }
            var accepted = true
            switch sent {
            case .success(let value): accepted = value
            case .failure(let error):
                try decodeFailed(error, lines: lines, lane: lane)
            }
            var consecutiveErrors = 0
            while true {
                let (received, receiveLines) = FFmpegLog.capturingErrors {
                    Result { try lane.decoder.receive(lane.frame) }
                }
                switch received {
                case .success(.ready):
                    consecutiveErrors = 0
                    try handle(lane, lane.frame, output)
                    continue
                case .success:
                    break
                case .failure(let error):
                    try decodeFailed(error, lines: receiveLines, lane: lane)
                    consecutiveErrors += 1
                    if consecutiveErrors > 64 {
                        throw TranscodeError(.corrupt, "\(lane.decoder.codecName) decoder keeps failing: \(error)")
                    }
                    continue
                }
                break
            }
            if accepted { return }
        }
    }

    /// A decoder rejected data: counted with `skipDecodeErrors`, otherwise the end of the job.
    private func decodeFailed(_ error: Error, lines callLines: [String], lane: EncodeLane) throws {
        let lines = callLines + lane.decoder.takeWorkerLog().filter { !callLines.contains($0) }
        let text = lines.isEmpty ? "\(error)" : "\(lines.joined(separator: "; ")) (\(error))"
        let message = "\(lane.decoder.codecName) decoder: \(text)"
        guard plan.skipDecodeErrors else {
            throw TranscodeError(.corrupt, message + "; set on_decode_error: skip to continue past damaged packets")
        }
        stats.decodeErrors += 1
        if stats.firstDecodeError == nil { stats.firstDecodeError = message }
    }

    private func handleVideo(_ lane: EncodeLane, _ frame: MediaFrame, _ output: MediaOutput) throws {
        stats.videoFramesDecoded += 1
        try tap(frame, timeBase: lane.inputTimeBase)
        guard let pts = frame.bestEffortTimestamp else {
            stats.videoFramesDropped += 1
            return
        }
        if let maxFrameRate = lane.maxFrameRate, maxFrameRate > 0 {
            // Keep a frame when it reaches the next slot of the capped rate (a tenth of a slot early is fine, so
            // 60 → 30 keeps every other frame exactly); otherwise drop it.
            let time = Double(pts) * Double(lane.inputTimeBase.num) / Double(lane.inputTimeBase.den)
            let interval = 1 / maxFrameRate
            if let slot = lane.nextSlot, time < slot - interval * 0.1 {
                stats.videoFramesDropped += 1
                return
            }
            let slot = lane.nextSlot ?? time
            lane.nextSlot = time > slot + interval ? time + interval : slot + interval
        }
        let settings = lane.encoder
        let width = Int(settings.width)
        let height = Int(settings.height)
        var toEncode = frame
        if !(frame.isYUV420P && frame.width == width && frame.height == height) {
            if lane.scaler.map({ !$0.accepts(frame) }) ?? true {
                lane.scaler = try encodeCall { try ImageScaler(videoFrom: frame, width: width, height: height) }
            }
            if let scaler = lane.scaler {
                try encodeCall { try scaler.scale(frame, into: lane.converted) }
                toEncode = lane.converted
            }
        }
        toEncode.prepareForEncoder(pts: pts)
        try encode(toEncode, lane: lane, output: output)
        stats.videoFramesEncoded += 1
        if toEncode === lane.converted { lane.converted.unref() }
    }

    private func handleAudio(_ lane: EncodeLane, _ frame: MediaFrame, _ output: MediaOutput) throws {
        if lane.resampler == nil {
            lane.resampler = try encodeCall { try AudioResampler(from: frame, to: lane.encoder) }
            // The first sample's time in the encoder's 1/sample_rate base keeps audio in step with video.
            if let pts = frame.bestEffortTimestamp, lane.inputTimeBase.den > 0 {
                let seconds = Double(pts) * Double(lane.inputTimeBase.num) / Double(lane.inputTimeBase.den)
                let samples = (seconds * Double(lane.encoder.timeBase.den)).rounded()
                // A damaged timestamp must not trap the conversion; such a stream simply starts at zero.
                lane.nextSamplePTS = abs(samples) < 1e15 ? Int64(samples) : 0
            }
        }
        guard let resampler = lane.resampler else { return }
        try encodeCall { try resampler.push(frame) }
        try drainResampler(lane, output: output, partialLast: false)
    }

    /// Encodes whole encoder frames from the resampler's queue; at the end (`partialLast`) the short rest too.
    private func drainResampler(_ lane: EncodeLane, output: MediaOutput, partialLast: Bool) throws {
        guard let resampler = lane.resampler else { return }
        let frameSize = max(lane.encoder.frameSize, 1)
        while resampler.buffered >= frameSize || (partialLast && resampler.buffered > 0) {
            let count = min(frameSize, resampler.buffered)
            try encodeCall { try resampler.pull(into: lane.converted, count: count) }
            lane.converted.prepareForEncoder(pts: lane.nextSamplePTS)
            lane.nextSamplePTS += Int64(count)
            try encode(lane.converted, lane: lane, output: output)
            stats.audioSamplesEncoded += count
            lane.converted.unref()
        }
    }

    /// Sends `frame` (nil: flush) to the lane's encoder and writes every packet that comes out.
    private func encode(_ frame: MediaFrame?, lane: EncodeLane, output: MediaOutput) throws {
        while true {
            let accepted = try encodeCall { try lane.encoder.send(frame) }
            while try encodeCall({ try lane.encoder.receive(lane.packet) }) == .ready {
                try outputCall {
                    try output.write(lane.packet, timeBase: lane.encoder.timeBase, stream: lane.outputIndex)
                }
            }
            if accepted { return }
        }
    }

    private func encodeCall<R>(_ body: () throws -> R) throws -> R {
        let (result, lines) = FFmpegLog.capturingErrors { Result { try body() } }
        switch result {
        case .success(let value): return value
        case .failure(let error as TranscodeError): throw error
        case .failure(let error):
            let text = lines.isEmpty ? "\(error)" : "\(lines.joined(separator: "; ")) (\(error))"
            throw TranscodeError(.encode, text)
        }
    }

    private func outputCall<R>(_ body: () throws -> R) throws -> R {
        do {
            return try body()
        } catch let error as FFmpegError {
            // A muxer that cannot hold a codec says so in its log ("codec not currently supported in container").
            let unsupported = error.message.contains("not currently supported") || error.message.contains("codec tag")
            throw TranscodeError(unsupported ? .unsupported : .output, "the \(plan.container.rawValue) muxer: \(error)")
        }
    }
}
