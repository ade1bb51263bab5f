import Foundation
import Logging
import ODRFSCore
import ODRFSFetch
import ODRFSRuntime
import ODRFSStore
import Synchronization

/// The resource manager: what the filesystem and the control plane ask for packs.
///
/// A facade over four parts, each with one job:
/// - ``CacheLedger``: every pack's slot, retains and byte accounting under one lock, changed
///   only through its intents;
/// - ``DownloadCoordinator``: single-flight downloads, their waiters and queue;
/// - ``Purger``: deletion under pressure or on request, as ``QuotaPolicy`` decides;
/// - tag requests (`ResourceManager+Requests.swift`): NSBundleResourceRequest semantics.
///
/// Retains are taken under the same lock that publishes a finished download or evicts a
/// pack, so a retained pack is never evicted and a waiter never receives a pack that is
/// already gone. A download reserves its bytes before it starts, so concurrent downloads
/// never overshoot the budget together.
///
/// Lock order: the cache ledger's lock, then the `DownloadQueue`'s (tickets are made under
/// it); the queue never calls back. `VerifiedFile`, `ProgressObservers` and the purger's
/// last-measurement locks are leaves. No lock is held across I/O, logging or callbacks.
/// See the module's threading model for which thread runs what.
public final class ResourceManager: Sendable {
    public let manifest: Manifest
    /// The manifest's tag → packs relation, indexed once (per-tag lookups at mount and per request).
    public let tagPacks: TagPackIndex
    public let limits: CacheLimits
    let store: PackStore
    let downloader: PackDownloader
    let logger: Logger
    /// Where the cache's blocking calls run.
    let io: IOExecutor
    let table: CacheLedger
    let coordinator: DownloadCoordinator
    let purger: Purger
    /// Tag requests and the initial install, told when their packs move.
    let progressObservers: ProgressObservers
    /// The last update check's outcome, for status (see `BundleUpdater`).
    let updateCheck = UpdateCheckRecord()
    /// This session's first need of each pack (`odrfs trace`).
    let recorder: AccessRecorder
    /// `--max-background-rate` and `--prefetch-delay`, kept so that an update's manager
    /// schedules like this one.
    let schedule: SchedulerSettings
    /// What ``publishToStore()`` last recorded in the store (nil: nothing yet).
    let published = Mutex<(priorities: [Double], running: Bool)?>(nil)
    /// Packs whose cached copies wait in `unverified/` for ``verifyUnverifiedPacks()``.
    let unverified: [PackNumber]
    /// Which of the mount's served views this manager's pack numbers belong to: 1 at mount,
    /// one more at each switch (an update, or `odrfs variant`, which keeps the revision
    /// number). Retains taken in one view are released in it (``MountRevisions``).
    public let generation: Int64
    /// The value each variant key serves in this manager's view (for status); empty
    /// without variants.
    public let selectedVariants: [(key: VariantKey, value: VariantValue)]

    /// Reconciles the cache with the index, then starts with what is verified on disk.
    /// Blocking (it may hash cached files): call it on the I/O executor.
    ///
    /// `deferringHashes` (the first manager of a mount): cached copies that need a fresh
    /// hash are not read now but left to ``verifyUnverifiedPacks()`` or their first download,
    /// so the mount does not wait for them; they are not local until then.
    public init(
        manifest: Manifest,
        store: PackStore,
        downloader: PackDownloader,
        limits: CacheLimits = CacheLimits(),
        maximumConcurrentDownloads: Int = 8,
        logger: Logger,
        clock: @escaping @Sendable () -> Date = Date.init,
        availableBytes: (@Sendable () -> Int64?)? = nil,
        io: IOExecutor = .cache,
        schedule: SchedulerSettings = SchedulerSettings(),
        events: CacheEvents = CacheEvents(),
        deferringHashes: Bool = false,
        beginningTrace: Bool = true,
        generation: Int64 = 1,
        selectedVariants: [(key: VariantKey, value: VariantValue)] = [],
        chunkMap: @escaping @Sendable (PackNumber) -> PackChunkMap = { _ in .empty },
        tagPacks: TagPackIndex? = nil
    ) throws(StoreError) {
        self.manifest = manifest
        self.generation = generation
        self.selectedVariants = selectedVariants
        // Built once per manifest: the mount hands over the one its early install used.
        self.tagPacks = tagPacks ?? TagPackIndex(manifest)
        self.limits = limits
        self.store = store
        self.downloader = downloader
        self.logger = logger
        self.io = io
        self.schedule = schedule
        let report = try store.reconcile(expected: manifest.packs, chunkSize: manifest.chunkSize, now: clock(),
                                         deferringHashes: deferringHashes)
        let waiting = Set(report.unverified.map(\.sha256))
        unverified = manifest.packs.indices.filter { waiting.contains(manifest.packs[$0].sha256) }.map { PackNumber(UInt32($0)) }
        let overrides = try store.bundleIndex.priorityOverrides()
        table = CacheLedger(manifest: manifest, limits: limits, clock: clock, verified: Self.ownedPacks(report.packs, of: manifest, in: store),
                            priorityOverrides: overrides, events: events, hold: { [store] in store.hold(sha256: $0) })
        purger = Purger(table: table, store: store, logger: logger, availableBytes: availableBytes ?? { [store] in store.availableBytes() })
        progressObservers = ProgressObservers()
        recorder = AccessRecorder(manifest: manifest, store: store, io: io, logger: logger, now: clock(), beginning: beginningTrace)
        coordinator = DownloadCoordinator(table: table, downloader: downloader, purger: purger,
                                          maximumConcurrent: maximumConcurrentDownloads, observers: progressObservers,
                                          io: io, logger: logger, schedule: schedule, chunkMap: chunkMap)
        measureMetadata()
        publishToStore()
    }

    /// The verified packs this manager accounts for: in a private cache all of them (those
    /// the manifest does not name are orphans, evicted first); in a store, the same less
    /// the packs other live mounts' revisions name, which are theirs to keep.
    /// Blocking (reads the store's `mounts/`): runs within `init`, on the I/O executor.
    private static func ownedPacks(_ verified: [String: CachedPack], of manifest: Manifest, in store: PackStore) -> [String: CachedPack] {
        guard store.isShared else { return verified }
        // This revision's own references are recorded, with their priorities, once the
        // ledger exists (`publishToStore`, at the end of `init`).
        let ours = Set(manifest.packs.map(\.sha256.hex))
        let theirs = store.referencesOfOtherMounts()
        return verified.filter { ours.contains($0.key) || !theirs.contains($0.key) }
    }

    /// Fetches, evictions, retains and releases as they happen (`odrfs events`).
    public var events: CacheEvents { table.events }
    /// Opens, fetched bytes, errors and evictions, through swift-metrics.
    public var metrics: MountMetrics { table.metrics }

    // MARK: Access

    /// Makes `pack` local (downloading it once, however many callers wait) and
    /// retains it. Throws `FetchError` on failure and `.cancelled` if the calling
    /// task is cancelled first; the download itself carries on for other waiters.
    public func retain(_ pack: PackNumber, priority: DownloadPriority = .urgent) async throws(FetchError) {
        try await coordinator.acquire(pack, retains: true, priority: priority)
    }

    /// Makes `pack` local without retaining it (initial install, prefetch).
    public func makeLocal(_ pack: PackNumber, priority: DownloadPriority = .urgent) async throws(FetchError) {
        try await coordinator.acquire(pack, retains: false, priority: priority)
    }

    /// Drops one retain of `pack`. An unbalanced release is logged and ignored,
    /// so a count can never go negative.
    public func release(_ pack: PackNumber) {
        switch table.release(pack) {
        case .underflow:
            logger.error("release without retain ignored", metadata: ["pack.id": "\(manifest.pack(pack).id)"])
        case .released(let nowUnretained):
            // A pack held over budget may be purged now (the policy decides whether to look).
            if nowUnretained { purger.wake(.afterRelease) }
        }
    }

    /// Records that the cached copy of `pack` vanished (e.g. deleted by hand), so the
    /// next open downloads it again instead of failing forever.
    public func markMissing(_ pack: PackNumber) {
        _ = table.markMissing(pack)
        let descriptor = manifest.pack(pack)
        // Only if the file is still absent: in a store, another mount may have published it
        // again (and recorded its row) since this one found it gone.
        io.submit { [store] in
            if FileIdentity.of(path: store.path(of: descriptor)) == nil { try? store.index.removePack(sha256: descriptor.sha256.hex) }
        }
        logger.warning("cached pack missing; it will be downloaded again", metadata: ["pack.id": "\(manifest.pack(pack).id)"])
    }

    /// Where the verified copy of `pack` lives in the cache.
    public func path(of pack: PackNumber) -> String {
        store.path(of: manifest.pack(pack))
    }

    /// Withdraws a waiter registered by `openReader` (a FUSE interrupt).
    public func cancelWaiter(_ waiterID: UInt64, on pack: PackNumber) {
        coordinator.cancelWaiter(waiterID, on: pack)
    }
}
