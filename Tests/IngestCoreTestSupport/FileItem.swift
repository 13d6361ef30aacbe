import Foundation

@testable import IngestCore

extension Item {
    /// The item a one-file walk would hand a stage for `path`: named by its last path component, with the size on
    /// disk (0 when the file cannot be read, so the stage under test reports that itself).
    static func onDisk(_ path: String) -> Item {
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? 0
        return Item(path: path, relativePath: (path as NSString).lastPathComponent, size: size)
    }
}
