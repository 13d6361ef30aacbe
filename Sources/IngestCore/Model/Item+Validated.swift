import Foundation
import NativeCurl
import NativeSystem

/// What was checked is what is sent (issue 19): the input file is pinned as it was listed (`Item.validated`), the
/// runner compares it before each stage and after the last (`changedFailure`), and an upload of the original reads
/// it from a descriptor that must show that very file when opened and after its last byte (`sendableSlice`). A
/// file renamed over, truncated or rewritten in place (a write moves the ctime, which nobody can set back) fails
/// with rule `changed`, and nothing the run made of it is kept as done.
extension Item {
    /// The original as validated when `artifact` is it; nil for a transcoded file (the run made it itself).
    package var validatedArtifact: FileStatus? { artifact == path ? validated : nil }

    /// The file slice an upload sends: the original as validated (the body reader refuses a file that is no longer
    /// it), or the artifact as it is now.
    package func sendableSlice() throws(SystemError) -> HTTPBody.FileSlice {
        if let validatedArtifact { return HTTPBody.FileSlice(path: path, status: validatedArtifact) }
        return HTTPBody.FileSlice(path: artifact, status: try FileStatus(path: artifact, followLinks: true))
    }

    /// A `changed` failure of `stage` when the file at `path` is no longer the one validated (`found` says when:
    /// "before stage upload"); nil when it is, or when it cannot be looked at (gone: the stage that reads it says
    /// `unreadable`). The hash taken of it is dropped so the journal keeps none of it.
    package func changedFailure(stage: String, found: String) -> RuleFailure? {
        guard let validated, let now = try? FileStatus(path: path, followLinks: true),
            let change = now.change(since: validated)
        else { return nil }
        knownSHA256 = nil
        knownIdentity = nil
        return RuleFailure(
            stage: stage, rule: .changed,
            message: "\(relativePath) changed after it was listed, found \(found): \(change); nothing made of it "
                + "is kept, the next run takes the file as it is then")
    }
}
