import Foundation
import Logging
import ODRFSCore
import ODRFSFetch
import ODRFSRuntime
import ODRFSStore
import Synchronization

/// One revision of a bundle as a mount serves it: its manifest and file index, the
/// resource manager that owns its packs, the filesystem view FUSE requests reach, and the
/// downloader its packs come through. The five are built together, by
/// ``make(published:view:variants:store:origin:wire:settings:succeeding:)`` — at mount
/// (``PreparedBundle``), at an update's switch and at a variant switch (``BundleUpdater``)
/// alike — except a mount's first revision of a bundle without variants, whose manager
/// ``firstManager(manifest:tagPacks:variants:store:origin:wire:settings:)`` builds while the file
/// index downloads and ``assemble(_:published:view:variants:settings:)`` completes; they are
/// replaced together: services, the control plane and metrics reach the revision served
/// now only through ``MountRevisions/current``.
///
/// With variants, ``manifest`` and ``index`` are the served view (``VariantView``): the
/// logical tree and only the packs the selection uses. Everything downstream works on
/// them and never sees another variant; ``published`` keeps what the origin signed.
public final class MountedRevision: Sendable {
    /// The served manifest: the published one cut to the selected variants' packs.
    public let manifest: Manifest
    /// The served (logical) file index.
    public let index: FileIndex
    /// The manifest and physical index as the origin publishes them.
    let published: PublishedRevision
    /// How this revision's view was chosen; a later revision is resolved the same way.
    let variants: VariantRequest
    /// The variant of each served file that came from a variant directory.
    let variantOfEntry: [EntryNumber: VariantAssignment]
    /// Pack state, retains and downloads of this revision.
    public let manager: ResourceManager
    /// The FUSE view of this revision (``RevisionSwitchingFileSystem`` forwards to it).
    let fileSystem: BundleFileSystem
    /// Where this revision's packs come from: the mount's origin, into the cache.
    public let downloader: PackDownloader

    /// The manifest's revision number.
    public var revision: Int64 { manifest.revision }

    /// The selection this revision serves.
    var selection: VariantSelection { variants.selection(for: published.manifest) }

    private init(view: VariantView, published: PublishedRevision, variants: VariantRequest, manager: ResourceManager,
                 fileSystem: BundleFileSystem, downloader: PackDownloader) {
        self.manifest = view.manifest
        self.index = view.index
        self.published = published
        self.variants = variants
        self.variantOfEntry = view.variantOfEntry
        self.manager = manager
        self.fileSystem = fileSystem
        self.downloader = downloader
    }

    /// What every revision of one mount shares: the mount's options.
    struct Settings: Sendable {
        var limits: CacheLimits
        var maximumConcurrentDownloads: Int
        var schedule: SchedulerSettings
        var passthrough: PassthroughSettings
        var io: IOExecutor
        var logger: Logger

        init(_ configuration: MountConfiguration, io: IOExecutor = .cache, logger: Logger) {
            self.limits = configuration.limits
            self.maximumConcurrentDownloads = configuration.maximumConcurrentDownloads
            self.schedule = configuration.schedule
            self.passthrough = configuration.passthrough
            self.io = io
            self.logger = logger
        }
    }

    /// The revision an update replaces, and the inode numbers the new tree takes over
    /// from it (``RevisionTransition``).
    struct Succession: Sendable {
        let previous: MountedRevision
        let inodes: InodeMap
    }

    /// The downloader of a revision whose packs are cut in `chunkSize` chunks; `wire`
    /// counts the bytes received, shared by every revision of a mount.
    static func downloader(origin: any Origin, store: PackStore, chunkSize: ByteCount, wire: WireByteCounter,
                           logger: Logger) -> PackDownloader {
        PackDownloader(origin: origin, store: store, chunkSize: chunkSize, wire: wire, logger: logger)
    }

    /// A first revision's manager, built before its file index has arrived
    /// (``firstManager(manifest:tagPacks:variants:store:origin:wire:settings:)``).
    struct FirstManager: Sendable {
        let manager: ResourceManager
        let downloader: PackDownloader
        /// The index its chunk maps read, set by ``assemble(_:published:view:variants:settings:)``.
        let index: IndexSlot
    }

    /// The file index a manager's chunk maps read, set once it is validated: a manager made
    /// before it arrived starts no download until then (``PreparedBundle`` sets it first).
    final class IndexSlot: Sendable {
        private let slot = Mutex<FileIndex?>(nil)
        func set(_ index: FileIndex) { slot.withLock { $0 = index } }
        var index: FileIndex? { slot.withLock { $0 } }
    }

    /// The manager of a mount's first revision of a bundle without variants (whose served
    /// manifest is the published one), built from the manifest alone: its tag tables and
    /// its reconciliation with the cache (0.35 s at 100,000 tags, issue 28) then overlap the
    /// file index's download instead of following it.
    static func firstManager(manifest: Manifest, tagPacks: TagPackIndex, variants: VariantRequest, store: PackStore,
                             origin: any Origin, wire: WireByteCounter, settings: Settings) async throws(StoreError) -> FirstManager {
        let chosen = variants.selection(for: manifest).chosen
        let downloader = Self.downloader(origin: origin, store: store, chunkSize: manifest.chunkSize, wire: wire, logger: settings.logger)
        let slot = IndexSlot()
        let chunkMap: @Sendable (PackNumber) -> PackChunkMap = { [manifest] pack in
            guard let index = slot.index, let descriptor = manifest.packIfPresent(pack) else { return .empty }
            return PackChunkMap(index: index, pack: pack, packBytes: descriptor.bytes.value)
        }
        let manager = try await settings.io.run { () throws(StoreError) in
            try ResourceManager(manifest: manifest, store: store, downloader: downloader, limits: settings.limits,
                                maximumConcurrentDownloads: settings.maximumConcurrentDownloads, logger: settings.logger,
                                io: settings.io, schedule: settings.schedule, deferringHashes: true, beginningTrace: false,
                                selectedVariants: chosen, chunkMap: chunkMap, tagPacks: tagPacks)
        }
        return FirstManager(manager: manager, downloader: downloader, index: slot)
    }

    /// The first revision around a ``FirstManager``, once `view`'s index is validated
    /// against the manifest the manager was made from (a bundle without variants: `view`
    /// is `published` as it is). The caller then begins its trace session
    /// (``ResourceManager/beginTraceSession(now:)``), on the I/O executor.
    static func assemble(_ first: FirstManager, published: PublishedRevision, view: VariantView, variants: VariantRequest,
                         settings: Settings) -> MountedRevision {
        first.index.set(view.index)
        let fileSystem = BundleFileSystem(index: view.index, manager: first.manager, logger: settings.logger,
                                          passthrough: settings.passthrough, variantOfEntry: view.variantOfEntry)
        return MountedRevision(view: view, published: published, variants: variants, manager: first.manager,
                               fileSystem: fileSystem, downloader: first.downloader)
    }

    /// Builds the revision serving `view` (``VariantRequest/view(of:)`` of `published`),
    /// whose manifest and index are checked against each other and whose packs `store`
    /// holds or will hold. Reconciling the manager with the cache reads the
    /// cache index (SQLite): on `settings.io`.
    ///
    /// - `wire`: the byte counter of the mount (the one the file index was fetched with).
    /// - `succeeding`: nil at mount — the mount's first manager, alone on the store, defers
    ///   re-hashing to the background. At an update, the revision replaced: its access times
    ///   and priorities are saved first and read by the new manager, which also takes over its
    ///   event stream, last update check and, in the view, its open files and inode numbers.
    static func make(published: PublishedRevision, view: VariantView, variants: VariantRequest, store: PackStore,
                     origin: any Origin, wire: WireByteCounter, settings: Settings,
                     succeeding: Succession?) async throws(StoreError) -> MountedRevision {
        let (manifest, index) = (view.manifest, view.index)
        let chosen = variants.selection(for: published.manifest).chosen
        let logger = settings.logger
        let downloader = Self.downloader(origin: origin, store: store, chunkSize: manifest.chunkSize, wire: wire, logger: logger)
        let old = succeeding?.previous.manager
        // The index's chunks of each pack's large files, for downloads (built per download).
        let chunkMap: @Sendable (PackNumber) -> PackChunkMap = { [index, manifest] pack in
            guard let descriptor = manifest.packIfPresent(pack) else { return .empty }
            return PackChunkMap(index: index, pack: pack, packBytes: descriptor.bytes.value)
        }
        let manager = try await settings.io.run { () throws(StoreError) in
            if let old {
                // Access times and priorities of the old revision first: the new manager reads them.
                old.saveAccesses()
                old.savePriorities()
                return try ResourceManager(manifest: manifest, store: store, downloader: downloader, limits: settings.limits,
                                           maximumConcurrentDownloads: settings.maximumConcurrentDownloads, logger: logger,
                                           io: settings.io, schedule: old.schedule, events: old.events,
                                       generation: old.generation + 1, selectedVariants: chosen, chunkMap: chunkMap)
            }
            return try ResourceManager(manifest: manifest, store: store, downloader: downloader, limits: settings.limits,
                                       maximumConcurrentDownloads: settings.maximumConcurrentDownloads, logger: logger,
                                       io: settings.io, schedule: settings.schedule, deferringHashes: true,
                                       selectedVariants: chosen, chunkMap: chunkMap)
        }
        let fileSystem: BundleFileSystem
        if let succeeding, let old {
            manager.adoptAccessTimes(from: old)
            let check = old.updateCheck.current
            if let available = check.availableRevision, let date = check.lastCheck {
                manager.updateCheck.record(availableRevision: available, at: date)
            }
            fileSystem = BundleFileSystem(index: index, manager: manager, logger: logger, inodes: succeeding.inodes,
                                          previous: succeeding.previous.fileSystem, variantOfEntry: view.variantOfEntry)
        } else {
            fileSystem = BundleFileSystem(index: index, manager: manager, logger: logger, passthrough: settings.passthrough,
                                          variantOfEntry: view.variantOfEntry)
        }
        return MountedRevision(view: view, published: published, variants: variants, manager: manager, fileSystem: fileSystem,
                               downloader: downloader)
    }

    /// A revision served without a mount (a control service over a bare manager, in tests):
    /// its view is an empty tree.
    static func detached(_ manager: ResourceManager) throws(FileIndexError) -> MountedRevision {
        let index = try FileIndex(bytes: FileIndexWriter(packCount: manager.manifest.packs.count).encode(root: .directory("")))
        return MountedRevision(view: VariantView(manifest: manager.manifest, index: index, variantOfEntry: [:]),
                               published: PublishedRevision(manifest: manager.manifest, index: index),
                               variants: VariantRequest(explicit: .none, environment: [:]), manager: manager,
                               fileSystem: BundleFileSystem(index: index, manager: manager, logger: manager.logger),
                               downloader: manager.downloader)
    }
}
