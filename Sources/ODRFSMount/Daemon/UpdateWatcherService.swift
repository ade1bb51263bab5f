import Logging
import ServiceLifecycle

/// `--update-interval`: asks the origin for a newer revision every interval and, with
/// `--update-policy auto`, switches to it; with `notify`, status shows it. Failures are
/// logged and retried at the next interval; they never affect the mount.
struct UpdateWatcherService: Service {
    let updater: BundleUpdater
    let interval: Duration
    let policy: UpdateSettings.Policy
    let logger: Logger

    func run() async {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await Task.sleep(for: interval)
                } catch {
                    return
                }
                do {
                    guard let report = try await updater.periodicCheck(), report.isUpdateAvailable else { continue }
                    if policy == .auto {
                        _ = try await updater.update()
                    } else {
                        logger.notice("a newer bundle revision is available; run odrfs update", metadata: [
                            "revision": "\(report.mountedRevision)", "available.revision": "\(report.availableRevision)",
                            "download.bytes": "\(report.downloadBytes)",
                        ])
                    }
                } catch {
                    logger.warning("periodic update check failed", metadata: ["error": "\(error)"])
                }
            }
        }
    }
}
