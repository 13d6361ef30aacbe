import Foundation
import IngestCore
import NativeSystem

/// A `move_to` folder that is an input folder or inside one: what is moved there would be taken again (and again).
package struct DisposalError: Error, Sendable, CustomStringConvertible {
    package var description: String
}

extension Disposal {
    /// Checks the `move_to` folders against the folders given to the run (or watched): neither equal to one nor
    /// inside one, symlinks resolved. Throws the first problem found.
    package func check(inputs: [String]) throws(DisposalError) {
        var named: [(key: String, folder: String)] = []
        if case .moveTo(let folder)? = onSuccess { named.append(("on_success", folder)) }
        if let onFailureMoveTo { named.append(("on_failure", onFailureMoveTo)) }
        for (key, folder) in named {
            let target = Disposal.resolved(folder)
            for input in inputs {
                guard (try? FileStatus(path: input, followLinks: true))?.kind == .directory else { continue }
                let root = Disposal.resolved(input)
                if target == root || target.hasPrefix(root == "/" ? "/" : root + "/") {
                    throw DisposalError(
                        description:
                            "\(key): move_to '\(folder)' is \(target == root ? "the input folder" : "inside the input folder") "
                            + "'\(input)': files moved there would be taken again; choose a folder outside it")
                }
            }
        }
    }

    /// The absolute path with symlinks resolved as far as it exists (the target folder may not exist yet).
    static func resolved(_ path: String) -> String {
        let absolute =
            path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var head = (absolute as NSString).standardizingPath
        var tail: [String] = []
        while head != "/" && AtomicCopy.resolved(head) == nil {
            tail.insert((head as NSString).lastPathComponent, at: 0)
            head = (head as NSString).deletingLastPathComponent
        }
        let base = AtomicCopy.resolved(head) ?? head
        return tail.reduce(base) { $0 == "/" ? "/" + $1 : $0 + "/" + $1 }
    }
}
