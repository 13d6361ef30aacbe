import Foundation

/// Where the package and the built `ingest` are, found from this file so tests run from any directory.
enum TestPaths {
    /// The package root: the nearest folder above this file that holds Package.swift (so moving this file does not
    /// break every path the tests build from it).
    static let root: String = {
        var folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while folder.path != "/" && !FileManager.default.fileExists(atPath: folder.path + "/Package.swift") {
            folder = folder.deletingLastPathComponent()
        }
        return folder.path
    }()

    /// The `ingest` executable `swift test` built next to the test bundle.
    static var ingest: String {
        let bundleDirectory = Bundle.allBundles.map(\.bundlePath).first { $0.hasSuffix(".xctest") }
            .map { ($0 as NSString).deletingLastPathComponent }
        let candidates =
            [bundleDirectory, (CommandLine.arguments.first as NSString?)?.deletingLastPathComponent]
            .compactMap { $0 }.map { $0 + "/ingest" } + [root + "/.build/debug/ingest"]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? candidates.last!
    }
}

/// Copies `Samples/<sample>` to `path`, making its folders: the input a seed pipeline test runs on.
func copySample(_ sample: String, to path: String) throws {
    try FileManager.default.createDirectory(
        atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    try FileManager.default.copyItem(atPath: TestPaths.root + "/Samples/" + sample, toPath: path)
}

/// The bytes of `Samples/good/NAME`.
func sample(_ name: String) throws -> Data {
    try Data(contentsOf: URL(fileURLWithPath: TestPaths.root + "/Samples/good/" + name))
}
