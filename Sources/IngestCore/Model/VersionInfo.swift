import IngestNative

/// What `ingest --version` prints: the tool's version, then the C libraries it runs on.
package enum VersionInfo {
    package static let tool = "0.1.0"

    package static var text: String {
        (["ingest \(tool)"] + LibraryVersions.lines).joined(separator: "\n")
    }
}
