import IngestCore
import NativeCurl

/// The run's token bucket (IngestCore) is what curl's read callback draws a request body through (NativeCurl).
extension SendLimiter: SendAllowance {}

/// A transfer in flight is what a cancelled run (`RunCancellation`, IngestCore) stops at once.
extension HTTPTransfer: CancellableWork {}
