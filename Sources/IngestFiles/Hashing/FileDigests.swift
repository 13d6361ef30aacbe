import Foundation
import IngestCore
import NativeSystem

/// SHA-256 and MD5 of the file being sent, read once in 256 KiB chunks and cached on the item (an upload that
/// streams the whole file fills the SHA-256 cache too, so a later callback does not read it again). MD5 is only
/// computed when a template asks for `{{md5}}`: it is the slower of the two and would cap upload throughput.
package enum FileDigests {
    package static func digest(_ name: String, of item: Item, stage: String) throws -> String {
        if case .string(let cached) = item.templateValues[name] { return cached }
        // The original's hash, already read (a dedupe key) or restored from the journal: one value, one read.
        if name == "sha256", item.artifact == item.path, let known = item.knownSHA256 {
            item.templateValues["sha256"] = .string(known)
            return known
        }
        let hasher = DigestObserver(md5: name == "md5")
        do {
            try ContentHash.read(item.artifact) { hasher.consume($0) }
        } catch let error as SystemError where error.call == "open" {
            throw ItemFailed(stage: stage, rule: .unreadable, message: "cannot open \(item.artifact) to hash it")
        } catch {
            throw ItemFailed(stage: stage, rule: .unreadable, message: "cannot read \(item.artifact): \(error)")
        }
        hasher.store(on: item)
        return name == "md5" ? hasher.md5Hex ?? "" : hasher.sha256Hex
    }
}
