import Foundation
import Logging
import ODRFSControl
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

/// Deletes unretained packs: under disk pressure (lowest preservation priority first,
/// then least recently used, other bundle versions before anything) and on request.
///
/// The one owner of deletion. Under the pack table's lock a victim is only marked
/// remote and its file renamed into `trash/` (so no open finds it and a later publish of
/// the same pack is never unlinked by mistake); the unlink, the index row and the log
/// line come after, outside the lock. Every method that deletes is blocking: it runs on
/// the I/O executor.
final class Purger: Sendable {
    let table: PackTable
    let store: PackStore
    let logger: Logger
    /// `statvfs` of the cache's filesystem (injected in tests).
    private let availableBytes: @Sendable () -> Int64?
    /// The figure last measured on the I/O executor, so status never calls `statvfs`.
    private let lastAvailableBytes: Mutex<Int64?>
    private let wakeups: AsyncStream<PurgeReason>.Continuation
    /// Why the background purger should look again (coalesced: only the newest waits).
    let events: AsyncStream<PurgeReason>
    /// Whether the last purge under pressure could not free what the limits asked for.
    private let overLimits = Mutex(false)

    init(table: PackTable, store: PackStore, logger: Logger, availableBytes: @escaping @Sendable () -> Int64?) {
        self.table = table
        self.store = store
        self.logger = logger
        self.availableBytes = availableBytes
        self.lastAvailableBytes = Mutex(availableBytes())
        (events, wakeups) = AsyncStream.makeStream(of: PurgeReason.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Asks the background purger to look again.
    func wake(_ reason: PurgeReason) {
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
        guard let available = measureAvailableBytes(), available < bytes else { return }
        // Not even the bytes themselves fit: purge whatever it takes.
        let freed = evict(freeing: bytes - available, reason: .diskFull, matching: { _ in true })
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
        let (cached, reserved) = table.withState { ($0.budgetedBytes, $0.reservedBytes) }
        let needed = table.limits.bytesToFree(cached: cached, reserved: reserved, available: table.limits.minimumFree == nil ? nil : measureAvailableBytes())
        guard needed > 0 else {
            overLimits.withLock { $0 = false }
            return 0
        }
        let freed = evict(freeing: needed, reason: reason, matching: { _ in true })
        let stuck = freed < needed
        // Once per episode: with pinned metadata over the budget every 2 s check would repeat it.
        let newlyStuck = overLimits.withLock { wasStuck in
            defer { wasStuck = stuck }
            return stuck && !wasStuck
        }
        if newlyStuck {
            let status = table.withState { (cached: $0.budgetedBytes, metadata: $0.metadataBytes, reserved: $0.reservedBytes, inUse: $0.inUseBytes) }
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
        report.kept = table.withState { state in
            state.slots.indices.filter { index in
                index > 0 && state.slots[index].isLocal && state.slots[index].retainCount > 0 && matching(PackNumber(UInt32(index)))
            }.map { table.manifest.packs[$0].id }
        }
        report.evicted = evictAll(reason: .requested, matching: matching)
        return report
    }

    /// Chooses victims with `EvictionPlanner` and deletes them. Returns bytes freed.
    func evict(freeing needed: Int64, reason: PurgeReason, matching: (PackNumber) -> Bool) -> Int64 {
        let (victims, overBudget) = table.withState { state -> ([Victim], Bool) in
            let overBudget = table.limits.isOverBudget(cached: state.budgetedBytes, reserved: state.reservedBytes)
            let plan = EvictionPlanner.plan(freeing: needed, from: candidates(state, matching: matching))
            return (plan.map { take($0.key, from: &state) }, overBudget)
        }
        return delete(victims, reason: reason, reported: reason.evictionReason(overBudget: overBudget)).reduce(0) { $0 + $1.bytes }
    }

    private func evictAll(reason: PurgeReason, matching: (PackNumber) -> Bool) -> [(id: String, bytes: Int64)] {
        let victims = table.withState { state -> [Victim] in
            candidates(state, matching: matching).filter { $0.priority >= 0 }.map { take($0.key, from: &state) }
        }
        return delete(victims, reason: reason, reported: reason.evictionReason(overBudget: false))
    }

    struct Victim {
        var sha256: String
        var id: String
        var bytes: Int64
        var priority: Double
        var lastAccess: Date?
    }

    /// Eviction candidates: local, unretained, not base, not downloading; plus packs of
    /// other bundle versions (priority -1, first to go).
    private func candidates(_ state: PackTable.State, matching: (PackNumber) -> Bool) -> [EvictionCandidate] {
        var result: [EvictionCandidate] = []
        for index in state.slots.indices.dropFirst() {
            let slot = state.slots[index]
            guard slot.isLocal, slot.retainCount == 0, slot.download == nil, matching(PackNumber(UInt32(index))) else { continue }
            let pack = table.manifest.packs[index]
            result.append(EvictionCandidate(key: pack.sha256.hex, bytes: pack.bytes.value + slot.backingBytes, priority: slot.priority, lastAccess: slot.lastAccess))
        }
        for orphan in state.orphans.values {
            result.append(EvictionCandidate(key: orphan.sha256, bytes: orphan.bytes, priority: -1, lastAccess: orphan.lastAccess))
        }
        return result
    }

    /// Marks a candidate gone under the lock and moves its file into the trash right away
    /// (one rename), so no open can find it and a new download of it published later is
    /// never deleted by mistake. Unlinking and the index row happen outside the lock.
    private func take(_ sha256: String, from state: inout PackTable.State) -> Victim {
        state.evictionCount += 1
        if let orphan = state.orphans.removeValue(forKey: sha256) {
            state.cachedBytes -= orphan.bytes
            store.moveToTrash(sha256: sha256)
            return Victim(sha256: sha256, id: orphan.packID + " (older bundle version)", bytes: orphan.bytes, priority: -1, lastAccess: orphan.lastAccess)
        }
        let index = table.manifest.packs.firstIndex { $0.sha256.hex == sha256 }!
        state.slots[index].isLocal = false
        // Unretained, so only the slot holds its descriptor: closed here, under the lock,
        // like the rename into trash/ below, so that its space is freed with it.
        PackTable.dropKeptFile(index, in: &state)
        state.cachedBytes -= table.manifest.packs[index].bytes.value
        store.moveToTrash(sha256: sha256)
        // Its passthrough backing files go with it (kernel-held ones live on until their last close).
        let backingBytes = state.slots[index].backingBytes
        for offset in state.slots[index].backingFiles.keys {
            store.moveBackingFileToTrash(sha256: sha256, offset: offset)
        }
        state.slots[index].backingFiles = [:]
        state.cachedBytes -= backingBytes
        return Victim(sha256: sha256, id: table.manifest.packs[index].id.rawValue, bytes: table.manifest.packs[index].bytes.value + backingBytes,
                      priority: state.slots[index].priority, lastAccess: state.slots[index].lastAccess)
    }

    /// Blocking (SQLite, unlink): runs on the I/O executor, outside the lock.
    private func delete(_ victims: [Victim], reason: PurgeReason, reported: MountEvent.EvictionReason) -> [(id: String, bytes: Int64)] {
        guard !victims.isEmpty else { return [] }
        defer { store.emptyTrash() }
        for victim in victims {
            do {
                // The file is already gone (`take`); deleting it again here could hit a
                // fresh download of the same pack published in the meantime.
                try store.index.removePack(sha256: victim.sha256)
            } catch {
                logger.error("cannot remove evicted pack from the cache index", metadata: ["pack.id": "\(victim.id)", "error": "\(error)"])
            }
            logger.notice("evicted pack", metadata: [
                "pack.id": "\(victim.id)", "pack.bytes": "\(victim.bytes)", "reason": "\(reason)",
                "pack.priority": "\(victim.priority)", "pack.lastAccess": "\(victim.lastAccess.map { "\($0)" } ?? "never")",
            ])
            // A pack only older bundle versions named was left behind by an update: evicted
            // for it (whatever pressure made room now), unless a purge asked for it by name.
            let cause: MountEvent.EvictionReason = victim.priority < 0 && reported != .manual ? .update : reported
            table.events.publish(evictedEvent(victim, cause))
            table.metrics.recordEviction(cause)
        }
        return victims.map { ($0.id, $0.bytes) }
    }

    /// The `evicted` event for `victim`: why, and the rule of the eviction order that chose it.
    private func evictedEvent(_ victim: Victim, _ reason: MountEvent.EvictionReason) -> MountEvent {
        let descriptor = table.manifest.packs.first { $0.sha256.hex == victim.sha256 }
        var event = MountEvent(event: .evicted, pack: victim.id, tags: descriptor?.tags.map(\.name) ?? [], bytes: victim.bytes)
        event.reason = reason.rawValue
        if reason == .manual {
            event.rule = "purge request"
        } else if victim.priority < 0 {
            event.rule = "older bundle version first"
        } else {
            let access = victim.lastAccess.map { $0.formatted(.iso8601) } ?? "never"
            event.rule = "lowest preservation priority first (\(victim.priority)), then least recently used (last access \(access))"
        }
        return event
    }
}
