import Foundation
import Logging
import ODRFSCore
import ODRFSFetch
import ServiceLifecycle

/// Brings an offline mount back online by itself: while no origin server answers (the
/// origin was down at mount time, or went down since), asks for `manifest.json` every
/// `interval`; the first answer marks the origin reachable again, and opens fetch as usual.
/// Logs one line when the mount goes offline and one when it comes back. While online, a
/// mirror marked unreachable is asked again every 30 s, so a server that came back is used
/// (and shown) again. Does nothing for `--offline` mounts, which never contact the origin.
struct OriginProbeService: Service {
    let origin: any Origin
    let manifestLimit: ByteCount
    let logger: Logger
    var interval: Duration = .seconds(2)

    func run() async {
        guard !(origin is OfflineOrigin) else { return }
        await cancelWhenGracefulShutdown {
            var wasOnline = true
            var rounds = 0
            while !Task.isCancelled {
                rounds += 1
                // Online but with servers down: look at those now and then (every 30 s).
                if origin.isOnline, rounds % 15 == 0, let set = origin as? MirrorSet {
                    await set.recheckUnreachable(Manifest.fileName, limit: manifestLimit)
                }
                if !origin.isOnline {
                    if wasOnline {
                        logger.warning("origin unreachable; the mount is offline (only cached packs open) until it answers",
                                       metadata: ["origin": "\(origin.displayName)"])
                        wasOnline = false
                    }
                    // Any answer (even an error status) records the server as reachable.
                    _ = try? await origin.data(at: Manifest.fileName, limit: manifestLimit)
                }
                if origin.isOnline && !wasOnline {
                    logger.notice("origin reachable again; the mount is back online", metadata: ["origin": "\(origin.displayName)"])
                    wasOnline = true
                }
                do { try await Task.sleep(for: interval) } catch { return }
            }
        }
    }

    /// Suspends until the origin is online (or the task is cancelled): prefetch waits here
    /// instead of failing pack after pack while the origin is down.
    static func waitUntilOnline(_ origin: any Origin, polling interval: Duration = .milliseconds(500)) async {
        while !origin.isOnline && !(origin is OfflineOrigin) && !Task.isCancelled {
            try? await Task.sleep(for: interval)
        }
    }
}
