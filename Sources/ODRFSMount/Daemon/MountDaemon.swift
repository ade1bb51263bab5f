import Foundation
import FUSEKit
import Logging
import ODRFSControl
import ODRFSCore
import ODRFSFetch
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
    public let manager: ResourceManager
    private let origin: any Origin
    private let session: FUSESession
    private let runtime: RuntimeDirectory
    private let control: ControlServer
    private let logger: Logger

    private init(mountpoint: String, origin: any Origin, manager: ResourceManager, session: FUSESession, logger: Logger) {
        self.mountpoint = mountpoint
        self.origin = origin
        self.manager = manager
        self.session = session
        self.runtime = RuntimeDirectory(mountpoint: mountpoint)
        self.control = ControlServer(
            socketPath: runtime.controlSocket,
            service: MountControlService(manager: manager, logger: logger),
            logger: logger
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
        let mountpoint = try Mountpoint.validate(configuration.mountpoint)
        let origin: any Origin
        do {
            origin = try OriginLocator.origin(for: configuration.origin, options: configuration.originOptions, logger: logger)
        } catch {
            throw MountError("cannot use origin: \(error)")
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
        let cacheRoot = configuration.resolvedCacheDirectory
        let store: PackStore
        do {
            store = try PackStore(root: cacheRoot, logger: logger)
        } catch {
            throw MountError("cannot use cache: \(error)")
        }
        let (manifestData, manifest) = try await loadManifest(from: origin, store: store, limit: configuration.manifestLimit, logger: logger)
        let downloader = PackDownloader(origin: origin, store: store, chunkSize: manifest.chunkSize, logger: logger)
        let index = try await loadIndex(manifest.index, store: store, downloader: downloader)
        do {
            try index.validate(against: manifest)   // pack numbers and extents: see FileIndex+Manifest
        } catch {
            throw MountError("the file index \(manifest.index.file) does not match the manifest: \(error)")
        }
        do {
            try store.saveManifest(manifestData)
        } catch {
            throw MountError("cannot write to cache: \(error)")
        }
        let manager: ResourceManager
        do {
            manager = try ResourceManager(
                manifest: manifest, store: store, downloader: downloader, limits: configuration.limits,
                maximumConcurrentDownloads: configuration.maximumConcurrentDownloads, logger: logger
            )
        } catch {
            throw MountError("cannot read the cache index: \(error)")
        }
        try await installInitialPacks(manager: manager, progress: progress)

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
        return MountDaemon(mountpoint: mountpoint, origin: origin, manager: manager, session: session, logger: logger)
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
        do {
            try control.start()
        } catch {
            // The mount works without its control socket; say so loudly.
            logger.error("control socket unavailable", metadata: ["socket": "\(runtime.controlSocket)", "error": "\(error)"])
        }
        logger.info("mounted", metadata: ["mountpoint": "\(mountpoint)"])
    }

    /// Calls the readiness callback exactly once, whichever of the probe and the
    /// loop's end comes first.
    private final class ReadinessLatch: Sendable {
        private let state: Mutex<(callback: (@Sendable (Result<Void, MountError>) -> Void)?, ready: Bool)>

        init(_ callback: @escaping @Sendable (Result<Void, MountError>) -> Void) {
            state = Mutex((callback, false))
        }

        func resolve(_ result: Result<Void, MountError>) {
            let callback = state.withLock { state -> (@Sendable (Result<Void, MountError>) -> Void)? in
                defer { state.callback = nil }
                if state.callback != nil, case .success = result { state.ready = true }
                return state.callback
            }
            callback?(result)
        }

        var wasReady: Bool { state.withLock { $0.ready } }
    }

    /// Readahead for the mount, in KiB. The kernel gives a FUSE mount 128 KiB, which
    /// turns a sequential read into 128 KiB requests; 4 MiB lets it send full 1 MiB
    /// requests (max_pages) with several in flight. Needs root; failures are harmless.
    static let readaheadKiB = 4096

    private static func raiseReadahead(mountpoint: String, logger: Logger) {
        // Not stat(2): the session does not serve requests yet, a stat would hang.
        // mountinfo's third field is the mount's device, "major:minor".
        guard let table = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8),
              let line = table.split(separator: "\n").last(where: { $0.split(separator: " ").count > 4 && $0.split(separator: " ")[4] == mountpoint[...] })
        else { return }
        let device = line.split(separator: " ")[2]
        let path = "/sys/class/bdi/\(device)/read_ahead_kb"
        do {
            try "\(readaheadKiB)\n".write(toFile: path, atomically: false, encoding: .utf8)
        } catch {
            logger.debug("cannot raise readahead", metadata: ["path": "\(path)", "error": "\(error)"])
        }
    }

    /// Serves requests on a dedicated thread (libfuse blocks it and starts its own
    /// workers; the Swift cooperative pool stays free for downloads) until the mount
    /// goes away, then tears the session down.
    ///
    /// `onReady` is called once: with success when the mount answers a `statfs`
    /// end to end (the kernel's INIT handshake is done and requests are served),
    /// or with the error if the session stops before that. Returns whether the
    /// mount ever became ready.
    @discardableResult
    public func run(onReady: @escaping @Sendable (Result<Void, MountError>) -> Void = { _ in }) async -> Bool {
        let session = self.session
        let logger = self.logger
        let maintenance = Task.detached(priority: .utility) { [manager] in await manager.runMaintenance() }
        let prefetch = Task.detached(priority: .background) { [manager, logger] in await Self.prefetch(manager: manager, logger: logger) }
        let readiness = ReadinessLatch(onReady)
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
            // statvfs blocks until the loop has done INIT and a worker answered, or fails
            // (ENOTCONN) once the session is gone; never before the loop starts.
            let probe = Thread { [mountpoint] in
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
                Self.raiseReadahead(mountpoint: mountpoint, logger: logger)
                readiness.resolve(.success(()))
            }
            probe.name = "mount-probe"
            probe.start()
        }
        // Clients' held requests end with their connections.
        await control.stop()
        prefetch.cancel()
        maintenance.cancel()
        manager.shutdown()
        runtime.removePID()
        await origin.shutdown()
        logger.info("unmounted", metadata: ["mountpoint": "\(mountpoint)"])
        return readiness.wasReady
    }

    /// The manifest from the origin; if the origin is unreachable and the cache holds
    /// the manifest of the version mounted last, that one (offline mode: local packs
    /// work, remote ones fail their opens until the origin is back).
    private static func loadManifest(from origin: any Origin, store: PackStore, limit: ByteCount, logger: Logger) async throws(MountError) -> (Data, Manifest) {
        let data: Data
        do {
            data = try await origin.data(at: Manifest.fileName, limit: limit)
        } catch {
            guard error.kind == .unreachable,
                  let cached = FileManager.default.contents(atPath: store.layout.manifestFile),
                  let manifest = try? Manifest.decode(cached) else {
                throw MountError("cannot read the bundle's manifest from \(origin.displayName): \(error)")
            }
            logger.warning("origin unreachable; mounting the cached bundle version offline", metadata: [
                "origin": "\(origin.displayName)", "bundle.version": "\(manifest.bundleVersion.hex.prefix(12))", "error": "\(error)",
            ])
            return (cached, manifest)
        }
        do {
            return (data, try Manifest.decode(data))
        } catch {
            throw MountError("the bundle's manifest from \(origin.displayName) is invalid: \(error)")
        }
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
    private static func installInitialPacks(manager: ResourceManager, progress: @escaping @Sendable (Int64, Int64) -> Void) async throws(MountError) {
        let manifest = manager.manifest
        var packs = [PackNumber(0)]
        for tag in manifest.initialInstall {
            for pack in manifest.packs(for: tag) where !packs.contains(pack) {
                packs.append(pack)
            }
        }
        let total = packs.reduce(Int64(0)) { $0 + manifest.pack($1).bytes.value }
        let installing = packs
        let reporter = Task { [installing] in
            while !Task.isCancelled {
                let status = manager.status()
                let done = installing.reduce(Int64(0)) { sum, pack in
                    let entry = status[Int(pack.rawValue)]
                    return sum + (entry.state == .downloading ? entry.bytesDownloaded.value : entry.state == .notDownloaded ? 0 : entry.bytes.value)
                }
                progress(done, total)
                try? await Task.sleep(for: .milliseconds(200))
            }
        }
        defer { reporter.cancel() }
        // All at once: the download queue bounds the concurrency.
        let failure = await withTaskGroup(of: (PackNumber, FetchError)?.self) { group in
            for pack in packs {
                group.addTask {
                    do throws(FetchError) {
                        try await manager.makeLocal(pack, priority: .urgent)
                        return nil
                    } catch {
                        return (pack, error)
                    }
                }
            }
            var first: (PackNumber, FetchError)?
            for await result in group where first == nil { first = result }
            return first
        }
        if let (pack, error) = failure {
            throw MountError("cannot install pack '\(manifest.pack(pack).id)' before mounting: \(error)")
        }
        progress(total, total)
    }

    /// Prefetch tags, in the manifest's order, at the lowest priority, after the mount
    /// is ready. Stops (with a log line) rather than evict other packs to make room.
    static func prefetch(manager: ResourceManager, logger: Logger) async {
        let manifest = manager.manifest
        var seen: Set<PackNumber> = []
        for tag in manifest.prefetch {
            for pack in manifest.packs(for: tag) where seen.insert(pack).inserted {
                if Task.isCancelled { return }
                if let budget = manager.limits.budget {
                    let cache = manager.cacheStatus()
                    if cache.cachedBytes + cache.reservedBytes + manifest.pack(pack).bytes.value > budget.value,
                       manager.state(of: pack) == .notDownloaded {
                        logger.notice("prefetch stopped: the cache budget is reached", metadata: ["pack.id": "\(manifest.pack(pack).id)"])
                        return
                    }
                }
                do {
                    try await manager.makeLocal(pack, priority: .prefetch)
                } catch {
                    logger.warning("prefetch of a pack failed", metadata: ["pack.id": "\(manifest.pack(pack).id)", "tag": "\(tag)", "error": "\(error)"])
                }
            }
        }
    }
}
