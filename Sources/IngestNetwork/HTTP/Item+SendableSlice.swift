import IngestCore
import IngestFiles
import NativeCurl
import NativeSystem

extension Item {
    /// The file slice an upload sends: the original as validated (the body reader refuses a file that is no longer
    /// it, `Item+Validated`), or the artifact as it is now.
    package func sendableSlice() throws(SystemError) -> HTTPBody.FileSlice {
        if let validatedArtifact { return HTTPBody.FileSlice(path: path, status: FileStatus(validatedArtifact)) }
        return HTTPBody.FileSlice(path: artifact, status: try FileStatus(path: artifact, followLinks: true))
    }
}
