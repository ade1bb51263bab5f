import Foundation
import FUSEKit
import Logging
import ODRFSControl
import ODRFSCore
import ODRFSFetch
import ODRFSStore

/// Brings a mount up and keeps it running: the daemon side of `odrfs mount`.
///
/// `prepare` does everything that can fail slowly or for reasons the user must hear
/// about — mountpoint checks, the manifest, the cache lock, the file index, the base
/// and initial-install packs — before anything is mounted, so a failed mount never
/// leaves a half-working filesystem behind. `mount` then attaches the kernel mount,
/// and `run` serves requests until unmount or SIGINT/SIGTERM/SIGHUP.
public final class MountDaemon: Sendable {
    public let mountpoint: String
    public let manager: ResourceManager
    private let session: FUSESession
    private let runtime: RuntimeDirectory
    private let logger: Logger

    private init(mountpoint: String, manager: ResourceManager, session: FUSESession, logger: Logger) {
        self.mountpoint = mountpoint
        self.manager = manager
        self.session = session
        self.runtime = RuntimeDirectory(mountpoint: mountpoint)
        self.logger = logger
    }

    public static func prepare(_ configuration: MountConfiguration, logger: Logger) async throws(MountError) -> MountDaemon {
        let mountpoint = try Mountpoint.validate(configuration.mountpoint)
        let origin: any Origin
        do {
            origin = try OriginLocator.origin(for: configuration.origin)
        } catch {
            throw MountError("cannot use origin: \(error)")
        }
        let manifestData: Data
        let manifest: Manifest
        do {
            manifestData = try await origin.data(at: Manifest.fileName, limit: configuration.manifestLimit)
            manifest = try Manifest.decode(manifestData)
        } catch {
            throw MountError("cannot read the bundle's manifest from \(origin.displayName): \(error)")
        }
        let cacheRoot = configuration.resolvedCacheDirectory
        let store: PackStore
        do {
            store = try PackStore(root: cacheRoot, logger: logger)
        } catch {
            throw MountError("cannot use cache: \(error)")
        }
        let downloader = PackDownloader(origin: origin, store: store, chunkSize: manifest.chunkSize, logger: logger)
        let index = try await loadIndex(manifest.index, store: store, downloader: downloader)
        do {
            try store.saveManifest(manifestData)
        } catch {
            throw MountError("cannot write to cache: \(error)")
        }
        let manager: ResourceManager
        do {
            manager = try ResourceManager(manifest: manifest, store: store, downloader: downloader, limits: configuration.limits, logger: logger)
        } catch {
            throw MountError("cannot read the cache index: \(error)")
        }
        try await installInitialPacks(manager: manager, logger: logger)

        let fileSystem = BundleFileSystem(index: index, manager: manager, logger: logger)
        var options = MountOptions(fsName: "odrfs", subtype: "odrfs")
        options.extra = configuration.fuseOptions
        let session: FUSESession
        do {
            session = try FUSESession(fileSystem: fileSystem, options: options, logger: logger)
        } catch {
            throw MountError("cannot start a FUSE session: \(error)")
        }
        logger.info("bundle ready", metadata: [
            "bundle.version": "\(manifest.bundleVersion.hex.prefix(12))", "files": "\(index.entryCount)",
            "packs": "\(manifest.packs.count)", "cache": "\(cacheRoot)",
        ])
        return MountDaemon(mountpoint: mountpoint, manager: manager, session: session, logger: logger)
    }

    /// Attaches the kernel mount. After this returns the mount is usable.
    public func mount() throws(MountError) {
        do {
            try session.installSignalHandlers()
            try session.mount(at: mountpoint)
        } catch {
            throw MountError("cannot mount at \(mountpoint): \(error)")
        }
        runtime.writePID()
        logger.info("mounted", metadata: ["mountpoint": "\(mountpoint)"])
    }

    /// Serves requests on a dedicated thread (libfuse blocks it and starts its own
    /// workers; the Swift cooperative pool stays free for downloads) until the mount
    /// goes away, then tears the session down.
    public func run() async {
        let session = self.session
        let logger = self.logger
        let maintenance = Task.detached(priority: .utility) { [manager] in await manager.runMaintenance() }
        defer {
            maintenance.cancel()
            manager.shutdown()
        }
        await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in
            let thread = Thread {
                do {
                    try session.run()
                } catch {
                    logger.error("FUSE session loop failed", metadata: ["error": "\(error)"])
                }
                session.unmountAndDestroy()
                finished.resume()
            }
            thread.name = "fuse-loop"
            thread.start()
        }
        runtime.removePID()
        logger.info("unmounted", metadata: ["mountpoint": "\(mountpoint)"])
    }

    private static func loadIndex(_ reference: IndexReference, store: PackStore, downloader: PackDownloader) async throws(MountError) -> FileIndex {
        if !store.contains(reference) {
            do {
                try await downloader.fetch(reference)
            } catch {
                throw MountError("cannot fetch the file index: \(error)")
            }
        }
        let index: FileIndex
        do {
            index = try FileIndex(contentsOf: store.path(of: reference))
        } catch {
            throw MountError("the file index \(reference.file) is invalid: \(error)")
        }
        guard index.entryCount == reference.entries else {
            throw MountError("the file index \(reference.file) has \(index.entryCount) entries but the manifest says \(reference.entries)")
        }
        return index
    }

    /// Base resources and initial-install tags are local before the mount is ready.
    private static func installInitialPacks(manager: ResourceManager, logger: Logger) async throws(MountError) {
        let manifest = manager.manifest
        var packs = [PackNumber(0)]
        for tag in manifest.initialInstall {
            for pack in manifest.packs(for: tag) where !packs.contains(pack) {
                packs.append(pack)
            }
        }
        for pack in packs {
            do {
                try await manager.makeLocal(pack)
            } catch {
                throw MountError("cannot install pack '\(manifest.pack(pack).id)' before mounting: \(error)")
            }
        }
    }
}
