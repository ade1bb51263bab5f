import Foundation
import Logging
import ODRFSCore
import ODRFSFetch
import ODRFSStore
import Synchronization

/// What an explicit purge did.
public struct PurgeReport: Sendable {
    /// Packs deleted, with their bytes.
    public var evicted: [(id: String, bytes: Int64)] = []
    /// Local packs that matched but are retained (open files or held requests): kept.
    public var kept: [PackID] = []
}

/// Carries out the ``QuotaPolicy``'s decisions: measures free space, asks the policy how
/// much must go and which packs, has the ``CacheLedger`` evict them, then deletes them.
///
/// Under the ledger's lock the policy chooses from the state as it is and each victim is
/// only marked remote and its file renamed into `trash/` (so no open finds it and a later
/// publish of the same pack is never unlinked by mistake); the unlink, the index row, the
/// log line and the event come after, outside the lock. Every method that deletes is
/// blocking: it runs on the I/O executor.
final class Purger: Sendable {
    let table: CacheLedger
    let store: PackStore
    let logger: Logger
    let policy: QuotaPolicy
    /// `statvfs` of the cache's filesystem (injected in tests).
    private let availableBytes: @Sendable () -> Int64?
    /// The figure last measured on the I/O executor, so status never calls `statvfs`.
    private let lastAvailableBytes: Mutex<Int64?>
    private let wakeups: AsyncStream<PurgeReason>.Continuation
    /// Why the background purger should look again (coalesced: only the newest waits).
    let events: AsyncStream<PurgeReason>
    /// Whether the last purge under pressure could not free what the limits asked for.
    private let overLimits = Mutex(false)
    /// The store's eviction log as far as this mount has applied it (nil: not read yet).
    let lastEvictionSeen = Mutex<Int64?>(nil)

    init(table: CacheLedger, store: PackStore, logger: Logger, availableBytes: @escaping @Sendable () -> Int64?) {
        self.table = table
        self.store = store
        self.logger = logger
        self.policy = QuotaPolicy(limits: table.limits)
        self.availableBytes = availableBytes
        self.lastAvailableBytes = Mutex(availableBytes())
        (events, wakeups) = AsyncStream.makeStream(of: PurgeReason.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Asks the background purger to look again, if the policy says `reason` may find pressure.
    func wake(_ reason: PurgeReason) {
        guard policy.shouldLook(after: reason) else { return }
        wakeups.yield(reason)
    }

    /// Ends the background purger's loop.
    func finish() {
        wakeups.finish()
    }

    /// Free bytes as last measured (never blocks).
    var lastMeasuredAvailableBytes: Int64? { lastAvailableBytes.withLock { $0 } }

    /// Measures free space on the cache's filesystem (`statvfs`; blocking: I/O executor only).
    @discardableResult
    func measureAvailableBytes() -> Int64? {
        let available = availableBytes()
        lastAvailableBytes.withLock { $0 = available }
        return available
    }

    /// Blocking: runs on the I/O executor. Before a download: frees what the limits require, counting this download's
    /// reservation; fails with `.noSpace` if the pack cannot fit on disk even after
    /// purging everything unretained. Exceeding the byte budget is allowed here — the
    /// caller will retain the pack — and reported in status.
    func makeRoom(for pack: PackNumber) throws(FetchError) {
        let bytes = table.manifest.pack(pack).bytes.value
        purgeForPressure(reason: .makingRoom(for: table.manifest.pack(pack).id.rawValue))
        reserveInStore(table.manifest.pack(pack))
        guard let available = measureAvailableBytes(), available < bytes else { return }
        // Not even the bytes themselves fit: purge whatever it takes.
        let freed = evict(freeing: bytes - available, reason: .diskFull)
        if let after = measureAvailableBytes(), after < bytes {
            throw FetchError(.noSpace, "no space for pack '\(table.manifest.pack(pack).id)' (\(ByteCount(bytes))) in the cache at \(store.layout.root): \(ByteCount(after)) free after purging \(ByteCount(freed)) of unused packs")
        }
    }

    /// Deletes unretained packs if the cache is above its budget or below its free-space
    /// floor, down to the low watermarks. Returns the bytes freed. Blocking (statvfs,
    /// SQLite, unlink): call it on the I/O executor.
    @discardableResult
    func purgeForPressure(reason: PurgeReason) -> Int64 {
        // Pinned metadata (file indexes, manifest) counts: it is on disk, so packs get the rest.
        let available = policy.watchesFreeSpace ? measureAvailableBytes() : nil
        let needed = table.read { policy.bytesToFree($0, available: available) }
        guard needed > 0 else {
            overLimits.withLock { $0 = false }
            return 0
        }
        let freed = evict(freeing: needed, reason: reason)
        let stuck = freed < needed
        // Once per episode: with pinned metadata over the budget every 2 s check would repeat it.
        let newlyStuck = overLimits.withLock { wasStuck in
            defer { wasStuck = stuck }
            return stuck && !wasStuck
        }
        if newlyStuck {
            let status = table.read { (cached: $0.budgetedBytes, metadata: $0.metadataBytes, reserved: $0.reservedBytes, inUse: $0.inUseBytes) }
            logger.warning("cache over its limits: retained packs and pinned file indexes cannot be purged", metadata: [
                "cache.bytes": "\(status.cached)", "cache.reserved": "\(status.reserved)", "cache.metadata": "\(status.metadata)",
                "cache.inUse": "\(status.inUse)", "cache.budget": "\(table.limits.budget?.value ?? -1)",
            ])
        }
        return freed
    }

    /// Deletes every unretained local pack whose pack number satisfies `matching`
    /// (`odrfs purge`); retained ones are reported as kept. Base is never purged.
    /// Blocking: call it on the I/O executor (or use `purge(matching:)`).
    @discardableResult
    func purgeNow(matching: @escaping (PackNumber) -> Bool) -> PurgeReport {
        var report = PurgeReport()
        report.kept = table.read { policy.keptOnRequest(from: $0, matching: matching) }
        let victims = table.evict(choosing: { policy.victimsOnRequest(from: $0, matching: matching) }, trash: moveToTrash)
        report.evicted = delete(victims, reason: .requested)
        return report
    }

    /// Has the policy choose victims freeing `needed` bytes and deletes them. Returns bytes freed.
    func evict(freeing needed: Int64, reason: PurgeReason) -> Int64 {
        let victims = table.evict(choosing: { policy.victims(freeing: needed, from: $0, reason: reason) }, trash: moveToTrash)
        return delete(victims, reason: reason).reduce(0) { $0 + $1.bytes }
    }

    /// Under the ledger's lock: one rename per file into `trash/`, unless another mount of
    /// the store holds the pack (then false: it stays, and the policy's next run looks again).
    func moveToTrash(_ sha256: String, backingOffsets: [Int64]) -> Bool {
        guard store.moveToTrashUnlessHeld(sha256: sha256) != .held else { return false }
        for offset in backingOffsets { store.moveBackingFileToTrash(sha256: sha256, offset: offset) }
        return true
    }

    /// Blocking (SQLite, unlink): runs on the I/O executor, outside the lock.
    private func delete(_ victims: [QuotaPolicy.Victim], reason: PurgeReason) -> [(id: String, bytes: Int64)] {
        guard !victims.isEmpty else { return [] }
        defer { store.emptyTrash() }
        for victim in victims {
            do {
                // The file is already gone (`evict`); deleting it again here could hit a
                // fresh download of the same pack published in the meantime.
                try store.index.removePack(sha256: victim.sha256)
            } catch {
                logger.error("cannot remove evicted pack from the cache index", metadata: ["pack.id": "\(victim.id)", "error": "\(error)"])
            }
            logger.notice("evicted pack", metadata: [
                "pack.id": "\(victim.id)", "pack.bytes": "\(victim.bytes)", "reason": "\(reason)",
                "pack.priority": "\(victim.priority)", "pack.lastAccess": "\(victim.lastAccess.map { "\($0)" } ?? "never")",
            ])
            table.events.publish(evictedEvent(victim))
            table.metrics.recordEviction(victim.reason)
        }
        return victims.map { ($0.id, $0.bytes) }
    }

    /// The `evicted` event for `victim`: why, and the rule of the eviction order that chose it.
    private func evictedEvent(_ victim: QuotaPolicy.Victim) -> CacheEvent {
        let tags: [Tag]
        if case .pack(let index) = victim.key { tags = table.manifest.packs[index].tags } else { tags = [] }
        return CacheEvent(.evicted(CacheEvent.Eviction(pack: victim.id, tags: tags, bytes: victim.bytes, reason: victim.reason, rule: victim.rule)))
    }
}
