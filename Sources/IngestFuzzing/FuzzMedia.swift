import IngestMedia
import NativeFFmpeg

extension FuzzEntries {
    /// What the prober does with timed media, on bytes in memory: sniff, pick the one demuxer that fits, open it
    /// through `MemoryIO` with stream info always read (it decodes a few frames), then map streams and location.
    static func media(_ bytes: [UInt8]) {
        let kind = Sniffer.sniff(header: Array(bytes.prefix(64)))
        guard let demuxer = Prober.demuxer(for: kind), let memory = try? MemoryIO(bytes: bytes) else { return }
        let limits = MediaInputLimits(timeout: 10, probeSize: 1 << 16, analyzeDuration: 1, streamInfo: .always)
        guard let input = try? MediaInput(path: "fuzz", demuxer: demuxer, limits: limits, memory: memory) else {
            return
        }
        _ = input.streams.map(Prober.streamInfo)
        _ = Prober.location(in: input.metadata)
    }
}
