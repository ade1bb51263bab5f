import Foundation
import Logging
import ODRFSCore
import ODRFSFetch
import ODRFSRuntime
import ODRFSStore
import Synchronization

/// Owns every pack's state: local or not, downloads in flight, retains, access
/// times, cache accounting and eviction.
///
/// - Single-flight: however many callers want a pack, one download runs; callers wait
///   as *waiters* on it. A waiter that is cancelled (a FUSE interrupt) leaves alone;
///   the download goes on for the others.
/// - Retains are taken under the same lock that publishes a finished download or
///   evicts a pack, so a retained pack is never evicted and a waiter never receives a
///   pack that is already gone.
/// - Accounting: `cachedBytes` is the size of verified packs on disk; a download
///   reserves its bytes (`reservedBytes`) before it starts, so concurrent downloads
///   never overshoot the budget together.
/// - Nothing here blocks for long: the lock guards bookkeeping, downloads and the
///   purger run in tasks, and index writes happen outside the lock.
///
/// Lock order: `state`, then the `DownloadQueue`'s own lock (tickets are made under
/// `state`); the queue never calls back, and no other lock is taken under `state`.
///
/// Invariants (under the lock): `retainCount >= 0`; a slot with a download in flight
/// is not local; waiters exist only while a download is in flight; `cachedBytes` is
/// the sum of local slots' and orphans' bytes; `reservedBytes` the sum of in-flight
/// downloads' bytes; `inUseBytes` the sum of retained slots' bytes.
public final class ResourceManager: Sendable {
    public let manifest: Manifest
    public let limits: CacheLimits
    let store: PackStore
    let downloader: PackDownloader
    let logger: Logger
    let clock: @Sendable () -> Date
    let availableBytes: @Sendable () -> Int64?
    let state: Mutex<State>
    let purgerWakeups: AsyncStream<PurgeReason>.Continuation
    let purgerEvents: AsyncStream<PurgeReason>
    let downloads: DownloadQueue
    /// Where the cache's blocking calls run (see the module's threading model).
    let io: IOExecutor
    /// Free bytes on the cache's filesystem as last measured on the I/O executor, so that
    /// status never calls `statvfs` on the caller's thread.
    let lastAvailableBytes: Mutex<Int64?>
    /// Tag requests and the initial install, told when their packs move.
    let progressObservers = ProgressObservers()

    /// Someone waiting for a pack: an open(), a tag request, the initial install.
    /// `resume` is called exactly once, outside the lock, from the thread that made the
    /// progress (the I/O thread that wrote the bytes, the download task that finished,
    /// the interrupt path that withdrew it). On success the retain (if `retains`) is
    /// already taken, and the file is the download's, readable up to at least `prefix`.
    struct Waiter {
        var retains: Bool
        /// Resume once this many leading bytes are verified (progressive open),
        /// instead of when the whole pack is published.
        var prefix: Int64?
        var resume: @Sendable (Result<VerifiedFile?, FetchError>) -> Void
    }

    struct Download {
        var waiters: [UInt64: Waiter] = [:]
        var bytesDone: Int64 = 0
        /// Leading bytes already written and proven by their chunk hashes.
        var verifiedBytes: Int64 = 0
        /// The file being written, with its own verified prefix; progressive readers read
        /// it (the same inode is published).
        var file: VerifiedFile?
        /// Readers that opened the pack before it was complete: the download must go on.
        var earlyReaders = 0
        var priority: DownloadPriority
        var ticket: UInt64
        /// Cancelled when the last waiter leaves: nobody wants the bytes any more.
        var task: Task<Void, Never>?
    }

    struct Slot {
        var isLocal = false
        var retainCount = 0
        var lastAccess: Date?
        /// Accesses not yet written to the cache index.
        var unsavedAccesses: Int64 = 0
        var download: Download?
        var fetchCount = 0
        var priority: Double = 0
    }

    struct State {
        var slots: [Slot]
        /// Verified packs of other bundle versions, by content hash: evicted first.
        var orphans: [String: CachedPack]
        var cachedBytes: Int64 = 0
        var reservedBytes: Int64 = 0
        /// Bytes of packs with a retain count above zero.
        var inUseBytes: Int64 = 0
        var priorityOverrides: [Tag: Double]
        /// Tags whose override changed since it was last written to the cache index.
        var unsavedPriorities: Set<Tag> = []
        var evictionCount = 0
        var nextWaiterID: UInt64 = 0
    }

    /// Reconciles the cache with the index, then starts with what is verified on disk.
    public init(
        manifest: Manifest,
        store: PackStore,
        downloader: PackDownloader,
        limits: CacheLimits = CacheLimits(),
        maximumConcurrentDownloads: Int = 8,
        logger: Logger,
        clock: @escaping @Sendable () -> Date = Date.init,
        availableBytes: (@Sendable () -> Int64?)? = nil,
        io: IOExecutor = .cache
    ) throws(StoreError) {
        self.io = io
        self.manifest = manifest
        self.limits = limits
        self.store = store
        self.downloader = downloader
        self.downloads = DownloadQueue(maximumConcurrent: maximumConcurrentDownloads)
        self.logger = logger
        self.clock = clock
        let measure = availableBytes ?? { [store] in store.availableBytes() }
        self.availableBytes = measure
        self.lastAvailableBytes = Mutex(measure())
        (purgerEvents, purgerWakeups) = AsyncStream.makeStream(of: PurgeReason.self, bufferingPolicy: .bufferingNewest(1))

        let report = try store.reconcile(expected: manifest.packs, chunkSize: manifest.chunkSize, now: clock())
        let overrides = try store.index.priorityOverrides()
        var orphans = report.packs
        var slots: [Slot] = []
        for pack in manifest.packs {
            var slot = Slot()
            if let record = orphans.removeValue(forKey: pack.sha256.hex) {
                slot.isLocal = true
                slot.lastAccess = record.lastAccess
            }
            slots.append(slot)
        }
        var state = State(slots: slots, orphans: orphans, priorityOverrides: overrides)
        state.cachedBytes = report.packs.values.reduce(0) { $0 + $1.bytes }
        Self.assignPriorities(&state, manifest: manifest)
        self.state = Mutex(state)
    }

    // MARK: Access


    /// Makes `pack` local (downloading it once, however many callers wait) and
    /// retains it. Throws `FetchError` on failure and `.cancelled` if the calling
    /// task is cancelled first; the download itself carries on for other waiters.
    public func retain(_ pack: PackNumber, priority: DownloadPriority = .urgent) async throws(FetchError) {
        try await acquire(pack, retains: true, priority: priority)
    }

    /// Makes `pack` local without retaining it (initial install, prefetch).
    public func makeLocal(_ pack: PackNumber, priority: DownloadPriority = .urgent) async throws(FetchError) {
        try await acquire(pack, retains: false, priority: priority)
    }

    /// Drops one retain of `pack`. An unbalanced release is logged and ignored,
    /// so a count can never go negative.
    public func release(_ pack: PackNumber) {
        let outcome = withState { state -> (underflow: Bool, nowUnretained: Bool) in
            let index = Int(pack.rawValue)
            guard state.slots[index].retainCount > 0 else { return (true, false) }
            state.slots[index].retainCount -= 1
            if state.slots[index].retainCount == 0 { state.inUseBytes -= manifest.packs[index].bytes.value }
            return (false, state.slots[index].retainCount == 0)
        }
        if outcome.underflow {
            logger.error("release without retain ignored", metadata: ["pack.id": "\(manifest.pack(pack).id)"])
        } else if outcome.nowUnretained && limits.budget != nil {
            // A pack held over budget may be purged now.
            purgerWakeups.yield(.afterRelease)
        }
    }

    /// Records that the cached copy of `pack` vanished (e.g. deleted by hand), so the
    /// next open downloads it again instead of failing forever.
    public func markMissing(_ pack: PackNumber) {
        let bytes = manifest.pack(pack).bytes.value
        withState { state in
            let index = Int(pack.rawValue)
            if state.slots[index].download == nil && state.slots[index].isLocal {
                state.slots[index].isLocal = false
                state.cachedBytes -= bytes
            }
        }
        let sha256 = manifest.pack(pack).sha256.hex
        io.submit { [store] in try? store.index.removePack(sha256: sha256) }
        logger.warning("cached pack missing; it will be downloaded again", metadata: ["pack.id": "\(manifest.pack(pack).id)"])
    }

    /// Where the verified copy of `pack` lives in the cache.
    public func path(of pack: PackNumber) -> String {
        store.path(of: manifest.pack(pack))
    }

    /// Measures free space on the cache's filesystem (`statvfs`; blocking: I/O executor only).
    @discardableResult
    func measureAvailableBytes() -> Int64? {
        let available = availableBytes()
        lastAvailableBytes.withLock { $0 = available }
        return available
    }

    /// Takes one retain and counts an access. Crossing `--max-in-use` is logged, never
    /// refused here: unmodified programs opening files must keep working.
    func retain(_ index: Int, in state: inout State, at now: Date) {
        if state.slots[index].retainCount == 0 {
            let bytes = manifest.packs[index].bytes.value
            state.inUseBytes += bytes
            // Logged when the limit is crossed, not on every open above it.
            if state.inUseBytes > limits.maximumInUse.value && state.inUseBytes - bytes <= limits.maximumInUse.value {
                logger.warning("packs in use exceed the in-use limit; opens are still allowed", metadata: [
                    "pack.id": "\(manifest.packs[index].id)", "inUse.bytes": "\(state.inUseBytes)",
                    "inUse.limit": "\(limits.maximumInUse.value)",
                ])
            }
        }
        state.slots[index].retainCount += 1
        state.slots[index].lastAccess = now.cacheIndexPrecision
        state.slots[index].unsavedAccesses += 1
    }

    /// A pack's preservation priority is the highest of its tags' (override, else the
    /// manifest's default); base resources are never purged, so theirs is irrelevant.
    static func assignPriorities(_ state: inout State, manifest: Manifest) {
        var defaults: [Tag: Double] = [:]
        for descriptor in manifest.tags { defaults[descriptor.tag] = descriptor.preservationPriority }
        for (offset, pack) in manifest.packs.enumerated() {
            state.slots[offset].priority = pack.tags.map { tag in
                state.priorityOverrides[tag] ?? defaults[tag] ?? 0
            }.max() ?? 0
        }
    }
}
