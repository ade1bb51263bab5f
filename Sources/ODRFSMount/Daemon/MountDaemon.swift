import Foundation
import FUSEKit
import Logging
import ODRFSControl
import ODRFSCore
import ODRFSFetch
import ODRFSRuntime
import ODRFSStore
import Synchronization

/// Brings a mount up and keeps it running: the daemon side of `odrfs mount`.
///
/// `prepare` does everything that can fail slowly or for reasons the user must hear
/// about — mountpoint checks, the manifest, the cache lock, the file index, the base
/// and initial-install packs — before anything is mounted, so a failed mount never
/// leaves a half-working filesystem behind. `mount` then attaches the kernel mount,
/// and `run` serves requests until unmount or SIGINT/SIGTERM/SIGHUP.
public final class MountDaemon: Sendable {
    public let mountpoint: String
    /// The revision served now (an update replaces it): metrics and services read it here
    /// each time, never keep it.
    public var current: MountedRevision { revisions.current }
    let revisions: MountRevisions
    let updater: BundleUpdater
    let updateSettings: UpdateSettings
    let origin: any Origin
    let session: FUSESession
    let runtime: RuntimeDirectory
    let control: ControlServer
    let logger: Logger
    /// The largest manifest the background probe accepts (``MountConfiguration/manifestLimit``).
    let manifestLimit: ByteCount
    /// `--prefetch-delay`.
    let prefetchDelay: Duration?

    /// `--learn-prefetch`: prefetch this machine's past order first.
    let learnPrefetch: Bool
    /// `--passthrough` and `--passthrough-min-size`.
    let passthrough: PassthroughSettings

    /// `--io-uring`: ask the session for FUSE over io_uring once mounted.
    let ioUring: Bool

    private init(mountpoint: String, origin: any Origin, revisions: MountRevisions, session: FUSESession,
                 updater: BundleUpdater, updateSettings: UpdateSettings,
                 manifestLimit: ByteCount, prefetchDelay: Duration?, learnPrefetch: Bool,
                 passthrough: PassthroughSettings, ioUring: Bool = false, shared: Bool = false, logger: Logger) {
        self.learnPrefetch = learnPrefetch
        self.passthrough = passthrough
        self.ioUring = ioUring
        self.mountpoint = mountpoint
        self.manifestLimit = manifestLimit
        self.prefetchDelay = prefetchDelay
        self.origin = origin
        self.revisions = revisions
        self.updater = updater
        self.updateSettings = updateSettings
        self.session = session
        self.runtime = shared ? RuntimeDirectory(sharedMountpoint: mountpoint) : RuntimeDirectory(mountpoint: mountpoint)
        self.control = ControlServer(
            socketPath: runtime.controlSocket,
            service: MountControlService(revisions: revisions, updater: updater, logger: logger,
                                         snapshot: { [session] manager in
                                             MountStatus.snapshot(of: manager, passthroughSettings: passthrough,
                                                                  passthrough: session.passthrough, transport: session.transport)
                                         }),
            logger: logger,
            access: shared ? .everyLocalUser(owner: geteuid()) : .ownerOnly(geteuid()),
            afterLargeReply: HeapRelease.shared.request
        )
        self.logger = logger
    }

    /// - Parameter progress: called with (bytes local, bytes total) while the base and
    ///   initial-install packs download, for a progress bar in the waiting `odrfs mount`.
    public static func prepare(
        _ configuration: MountConfiguration,
        logger: Logger,
        progress: @escaping @Sendable (Int64, Int64) -> Void = { _, _ in }
    ) async throws(MountError) -> MountDaemon {
        // stat, realpath and statvfs of a path that may be a hung FUSE or network mount: they
        // can block indefinitely, so on the I/O executor, never on the cooperative pool.
        let requested = configuration.mountpoint
        let mountpoint = try await IOExecutor.cache.run { () throws(MountError) in try Mountpoint.validate(requested) }
        let origin: any Origin
        if configuration.offline {
            origin = OfflineOrigin(displayName: OriginLocator.displayName(for: configuration.origin), lastContact: nil)
        } else {
            // An HTTP origin reads its token and CA files: on the I/O executor too.
            let (argument, mirrors, options) = (configuration.origin, configuration.mirrors, configuration.originOptions)
            do {
                origin = try await IOExecutor.cache.run { () throws(FetchError) in
                    try OriginLocator.origin(for: argument, mirrors: mirrors, options: options, logger: logger)
                }
            } catch {
                throw MountError("cannot use origin: \(error)")
            }
        }
        do {
            return try await assemble(configuration, mountpoint: mountpoint, origin: origin, logger: logger, progress: progress)
        } catch {
            // An HTTP origin owns a client that must be shut down, even on failure.
            await origin.shutdown()
            throw error
        }
    }

    private static func assemble(
        _ configuration: MountConfiguration,
        mountpoint: String,
        origin: any Origin,
        logger: Logger,
        progress: @escaping @Sendable (Int64, Int64) -> Void
    ) async throws(MountError) -> MountDaemon {
        let bundle = try await PreparedBundle.load(configuration, origin: origin, logger: logger, progress: progress)
        let (manifest, index) = (bundle.manifest, bundle.index)
        // Wrapped so that `odrfs update` can switch the revision under a running mount.
        let fileSystem = RevisionSwitchingFileSystem(bundle.revision)
        var options = MountOptions(fsName: "odrfs", subtype: "odrfs")
        options.extra = configuration.effectiveFuseOptions
        let session: FUSESession
        do {
            session = try FUSESession(fileSystem: fileSystem, options: options, logger: logger)
        } catch {
            throw MountError("cannot start a FUSE session: \(error)")
        }
        logger.info("bundle ready", metadata: [
            "bundle.version": "\(manifest.bundleVersion.hex.prefix(12))", "revision": "\(manifest.revision)",
            "signed": "\(bundle.isSigned)", "files": "\(index.entryCount)",
            "packs": "\(manifest.packs.count)", "cache": "\(bundle.revision.manager.store.layout.root)",
        ])
        let revisions = MountRevisions(fileSystem: fileSystem)
        let updater = BundleUpdater(origin: origin, revisions: revisions, kernel: session,
                                    configuration: configuration, logger: logger)
        return MountDaemon(mountpoint: mountpoint, origin: origin, revisions: revisions, session: session, updater: updater,
                           updateSettings: configuration.updates,
                           manifestLimit: configuration.manifestLimit, prefetchDelay: configuration.schedule.prefetchDelay,
                           learnPrefetch: configuration.learnPrefetch,
                           passthrough: configuration.passthrough, ioUring: configuration.ioUring,
                           shared: configuration.isSharedWithEveryUser, logger: logger)
    }

    /// Attaches the kernel mount. After this returns the mount is usable.
    public func mount() throws(MountError) {
        do {
            try session.installSignalHandlers()
            if ioUring {
                session.requestIOUring()
            }
            try session.mount(at: mountpoint)
        } catch {
            throw MountError("cannot mount at \(mountpoint): \(error)")
        }
        do {
            try runtime.writePID()
            try control.start()
        } catch {
            // The mount works without its control socket; say so loudly.
            logger.error("control socket unavailable", metadata: ["socket": "\(runtime.controlSocket)", "error": "\(error)"])
        }
        logger.info("mounted", metadata: ["mountpoint": "\(mountpoint)"])
        if passthrough.mode == .off {
            // FUSEKit logs the negotiated read path only when passthrough was asked for.
            logger.info("FUSE read path", metadata: ["fuse.read_path": "\(PassthroughSettings.switchedOffReadPath)"])
        }
    }

}
