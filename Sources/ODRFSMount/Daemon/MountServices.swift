import Foundation
import FUSEKit
import Logging
import ODRFSControl
import ODRFSCore
import ServiceLifecycle
import Synchronization

/// The FUSE session loop as a service. libfuse blocks the thread that runs it, so it
/// gets a dedicated thread (never a cooperative one); `run()` suspends until the loop
/// ends — unmount, SIGINT/SIGTERM/SIGHUP (libfuse's own handlers) or a graceful
/// shutdown of the group, which asks the session to exit.
final class FUSELoopService: Service, Sendable {
    private let session: FUSESession
    private let mountpoint: String
    private let logger: Logger
    private let readiness: ReadinessLatch

    init(session: FUSESession, mountpoint: String, readiness: ReadinessLatch, logger: Logger) {
        self.session = session
        self.mountpoint = mountpoint
        self.readiness = readiness
        self.logger = logger
    }

    func run() async {
        let session = self.session
        let logger = self.logger
        let readiness = self.readiness
        let mountpoint = self.mountpoint
        await withGracefulShutdownHandler {
            await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in
                let loop = Thread {
                    var failure = "the FUSE session stopped before the mount answered"
                    do {
                        try session.run()
                    } catch {
                        logger.error("FUSE session loop failed", metadata: ["error": "\(error)"])
                        failure = "\(error)"
                    }
                    session.unmountAndDestroy()
                    readiness.resolve(.failure(MountError("\(failure); see the log for libfuse's reason")))
                    finished.resume()
                }
                loop.name = "fuse-loop"
                loop.start()
                Self.probeReadiness(mountpoint: mountpoint, session: session, readiness: readiness, logger: logger)
            }
        } onGracefulShutdown: {
            session.exit()
        }
    }

    /// statvfs blocks until the loop has done INIT and a worker answered, or fails
    /// (ENOTCONN) once the session is gone; on a thread of its own.
    private static func probeReadiness(mountpoint: String, session: FUSESession, readiness: ReadinessLatch, logger: Logger) {
        let probe = Thread {
            var statistics = statvfs()
            var result = statvfs(mountpoint, &statistics)
            while result != 0 && errno == EINTR { result = statvfs(mountpoint, &statistics) }
            guard result == 0 else {
                // ENOTCONN: the session is gone and the loop's end reports why.
                // Anything else would leave the waiting `odrfs mount` hanging.
                if errno != ENOTCONN {
                    let reason = String(cString: strerror(errno))
                    readiness.resolve(.failure(MountError("the new mount at \(mountpoint) does not answer: statvfs: \(reason)")))
                    // Reported as failed, so do not leave it mounted.
                    session.exit()
                }
                return
            }
            // The kernel set the mount's readahead at INIT, which is now done.
            Readahead.raise(mountpoint: mountpoint, logger: logger)
            readiness.resolve(.success(()))
        }
        probe.name = "mount-probe"
        probe.start()
    }
}

/// The control socket as a service: listening from start, closed (with every client's
/// retains released) on shutdown.
struct ControlSocketService: Service {
    let server: ControlServer

    func run() async {
        // Suspend until shutdown (or cancellation); the server runs on its own threads.
        try? await gracefulShutdown()
        await server.stop()
    }
}

/// The background purger and access-time writer of the revision served now: when an
/// update retires a manager its loop ends, and the new manager's starts.
struct MaintenanceService: Service {
    let revisions: MountRevisions

    func run() async {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                let manager = revisions.current.manager
                await manager.runMaintenance()
                if revisions.current.manager === manager { return }
            }
        }
    }
}

/// The packs a lost or damaged index no longer vouched for, hashed after the mount is
/// ready (``ResourceManager/verifyUnverifiedPacks(while:)``), while that manager serves.
/// Ends when done.
struct VerificationService: Service {
    let revisions: MountRevisions

    func run() async {
        let manager = revisions.current.manager
        await cancelWhenGracefulShutdown {
            _ = await manager.verifyUnverifiedPacks(while: { [revisions] in revisions.current.manager === manager })
        }
    }
}

/// Prefetch tags, in the manifest's order, at the lowest priority, after the mount is
/// ready — with `--learn-prefetch`, first the packs this machine's earlier sessions needed,
/// in that order. Ends when done; stops (with a log line) rather than evict other packs
/// to make room.
struct PrefetchService: Service {
    let manager: ResourceManager
    let logger: Logger
    /// `--prefetch-delay`: no open may have waited for this long before prefetch starts.
    var delay: Duration?
    /// `--learn-prefetch`: this machine's past first-need order goes first.
    var learn = false

    func run() async {
        await cancelWhenGracefulShutdown {
            if let delay { await manager.waitForQuiet(delay) }
            let learned = learn ? await manager.learnedPrefetchOrder() : []
            if learn {
                logger.info("prefetch order learned from earlier sessions", metadata: ["packs": "\(learned.map { manager.manifest.pack($0).id.rawValue })"])
            }
            await Self.prefetch(manager: manager, logger: logger, first: learned)
        }
    }

    static func prefetch(manager: ResourceManager, logger: Logger, first learned: [PackNumber] = []) async {
        let manifest = manager.manifest
        var seen: Set<PackNumber> = []
        var order: [(pack: PackNumber, tag: String)] = learned.map { ($0, "learned") }
        for tag in manifest.prefetch {
            order += manager.tagPacks.packs(for: tag).map { ($0, tag.name) }
        }
        for (pack, tag) in order where seen.insert(pack).inserted {
            if Task.isCancelled { return }
            // Offline: wait for the origin rather than fail every remaining pack now.
            await OriginProbeService.waitUntilOnline(manager.downloader.origin)
            if !manager.prefetchFits(pack), manager.state(of: pack) == .notDownloaded {
                logger.notice("prefetch stopped: the cache budget is reached", metadata: ["pack.id": "\(manifest.pack(pack).id)"])
                return
            }
            manager.noteAccess(pack, cause: .prefetch)
            do {
                try await manager.makeLocal(pack, priority: .prefetch)
            } catch {
                logger.warning("prefetch of a pack failed", metadata: ["pack.id": "\(manifest.pack(pack).id)", "tag": "\(tag)", "error": "\(error)"])
            }
        }
    }
}
