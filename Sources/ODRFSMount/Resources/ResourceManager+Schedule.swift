import Foundation

extension ResourceManager {
    /// Returns once no open has waited for a download for `quiet` (checked every 50 ms),
    /// or when the task is cancelled: `--prefetch-delay`.
    public func waitForQuiet(_ quiet: Duration) async {
        while !Task.isCancelled {
            let idle = coordinator.foreground.quietFor
            if idle >= quiet { return }
            try? await Task.sleep(for: min(quiet - idle, .milliseconds(50)))
        }
    }

    /// Whether an open waits for a download now (prefetch is paused meanwhile).
    public var isForegroundBusy: Bool { coordinator.foreground.isBusy }
}
