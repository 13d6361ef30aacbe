import IngestNative

/// What `ingest --version` prints: the tool's version, then the C libraries it runs on.
public enum VersionInfo {
    public static let tool = "0.1.0"

    public static var text: String {
        (["ingest \(tool)"] + LibraryVersions.lines).joined(separator: "\n")
    }
}
