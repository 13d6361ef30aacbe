import Foundation
import NativeSystem

extension Runner {
    /// Ctrl-C (SIGINT) and SIGTERM cancel this run cleanly; a second signal exits at once with 128 + its number.
    /// `onSignal` is told the signal's name (`SIGINT`) on a thread of its own, after the run was cancelled.
    public func cancelOnInterruptSignals(_ onSignal: @escaping @Sendable (String) -> Void = { _ in }) {
        InterruptSignals.install { [weak self] number in
            let name = CurrentProcess.signalName(number)
            self?.cancel(reason: name)
            onSignal(name)
        }
    }
}
