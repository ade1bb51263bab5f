import Foundation
import Logging
import ODRFSRuntime
import ServiceLifecycle

extension MountDaemon {
    /// Serves the mount until it goes away: the FUSE loop, the control socket, the
    /// maintenance loop and prefetch run as services of one `ServiceGroup`. The FUSE loop
    /// ending (unmount, SIGINT/SIGTERM/SIGHUP) shuts the others down gracefully; then the
    /// cache state is saved, the pid file removed and the origin's connections closed.
    ///
    /// `onReady` is called once: with success when the mount answers a `statfs`
    /// end to end (the kernel's INIT handshake is done and requests are served),
    /// or with the error if the session stops before that. Returns whether the
    /// mount ever became ready.
    ///
    /// Once ready, the heap's free memory goes back to the kernel (``HeapRelease``): start-up
    /// frees tens of MiB that glibc would otherwise keep resident for the life of the mount.
    @discardableResult
    public func run(onReady: @escaping @Sendable (Result<Void, MountError>) -> Void = { _ in }) async -> Bool {
        let readiness = ReadinessLatch { result in
            if case .success = result { HeapRelease.shared.request() }
            onReady(result)
        }
        var watchers: [ServiceGroupConfiguration.ServiceConfiguration] = []
        if let interval = updateSettings.checkInterval {
            watchers.append(.init(service: UpdateWatcherService(updater: updater, interval: interval,
                                                                policy: updateSettings.policy, logger: logger)))
        }
        let group = ServiceGroup(configuration: .init(
            services: [
                .init(service: FUSELoopService(session: session, mountpoint: mountpoint, readiness: readiness, logger: logger),
                      successTerminationBehavior: .gracefullyShutdownGroup, failureTerminationBehavior: .gracefullyShutdownGroup),
                .init(service: ControlSocketService(server: control)),
                .init(service: MaintenanceService(revisions: revisions)),
                .init(service: PrefetchService(manager: current.manager, logger: logger, delay: prefetchDelay, learn: learnPrefetch), successTerminationBehavior: .ignore),
                .init(service: VerificationService(revisions: revisions), successTerminationBehavior: .ignore),
                .init(service: OriginProbeService(origin: origin, manifestLimit: manifestLimit, logger: logger),
                      successTerminationBehavior: .ignore),
            ] + watchers,
            // libfuse's handlers own SIGINT/SIGTERM/SIGHUP: they end the FUSE loop, which ends the group.
            gracefulShutdownSignals: [],
            logger: logger
        ))
        do {
            try await group.run()
        } catch {
            logger.error("mount services stopped with an error", metadata: ["error": "\(error)"])
        }
        await current.manager.shutdown()
        // unlink + rmdir: on the I/O executor, like every file operation of the daemon.
        await IOExecutor.cache.run { [runtime] in runtime.removePID() }
        await origin.shutdown()
        logger.info("unmounted", metadata: ["mountpoint": "\(mountpoint)"])
        return readiness.wasReady
    }
}
