/// Probes one file in-process. (Implementation: see the FFmpeg/EXIF/HEIF wrappers in IngestNative.)
public enum Prober {
    public static func probe(path: String, timeout: Double) throws -> ProbeResult {
        throw ProbeError(rule: "unsupported", message: "probe not implemented yet")
    }
}
