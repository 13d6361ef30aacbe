/// What was checked is what is sent (issue 19): the input file is pinned as it was listed (`Item.validated`), the
/// runner compares it before each stage and after the last (`changedFailure`), and an upload of the original reads
/// it from a descriptor that must show that very file when opened and after its last byte (`sendableSlice`). A
/// file renamed over, truncated or rewritten in place (a write moves the ctime, which nobody can set back) fails
/// with rule `changed`, and nothing the run made of it is kept as done. The checks that look at the disk are
/// IngestFiles' (`changedFailure`), the upload's body IngestNetwork's (`sendableSlice`).
extension Item {
    /// The original as validated when `artifact` is it; nil for a transcoded file (the run made it itself).
    package var validatedArtifact: ListedStatus? { artifact == path ? validated : nil }
}
