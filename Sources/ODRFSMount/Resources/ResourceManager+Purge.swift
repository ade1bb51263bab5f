import Foundation
import Logging
import ODRFSCore
import ODRFSFetch
import ODRFSStore

/// What an explicit purge did.
public struct PurgeReport: Sendable {
    /// Packs deleted, with their bytes.
    public var evicted: [(id: String, bytes: Int64)] = []
    /// Local packs that matched but are retained (open files or held requests): kept.
    public var kept: [PackID] = []
}

extension ResourceManager {
    /// Blocking: runs on the I/O executor. Before a download: frees what the limits require, counting this download's
    /// reservation; fails with `.noSpace` if the pack cannot fit on disk even after
    /// purging everything unretained. Exceeding the byte budget is allowed here — the
    /// caller will retain the pack — and reported in status.
    func makeRoom(for pack: PackNumber) throws(FetchError) {
        let bytes = manifest.pack(pack).bytes.value
        purgeForPressure(reason: .makingRoom(for: manifest.pack(pack).id.rawValue))
        guard let available = measureAvailableBytes(), available < bytes else { return }
        // Not even the bytes themselves fit: purge whatever it takes.
        let freed = evict(freeing: bytes - available, reason: .diskFull, matching: { _ in true })
        if let after = measureAvailableBytes(), after < bytes {
            throw FetchError(.noSpace, "no space for pack '\(manifest.pack(pack).id)' (\(ByteCount(bytes))) in the cache at \(store.layout.root): \(ByteCount(after)) free after purging \(ByteCount(freed)) of unused packs")
        }
    }

    /// Deletes unretained packs if the cache is above its budget or below its free-space
    /// floor, down to the low watermarks. Returns the bytes freed. Blocking (statvfs,
    /// SQLite, unlink): call it on the I/O executor.
    @discardableResult
    public func purgeForPressure(reason: PurgeReason) -> Int64 {
        let (cached, reserved) = withState { ($0.cachedBytes, $0.reservedBytes) }
        let needed = limits.bytesToFree(cached: cached, reserved: reserved, available: limits.minimumFree == nil ? nil : measureAvailableBytes())
        guard needed > 0 else { return 0 }
        let freed = evict(freeing: needed, reason: reason, matching: { _ in true })
        if freed < needed {
            let status = cacheStatus()
            logger.warning("cache over its limits: retained packs cannot be purged", metadata: [
                "cache.bytes": "\(status.cachedBytes)", "cache.reserved": "\(status.reservedBytes)",
                "cache.inUse": "\(status.inUseBytes)", "cache.budget": "\(limits.budget?.value ?? -1)",
            ])
        }
        return freed
    }

    /// `purgeNow` on the I/O executor, for callers in tasks (the control plane).
    public func purge(matching: @escaping @Sendable (PackNumber) -> Bool) async -> PurgeReport {
        await io.run { self.purgeNow(matching: matching) }
    }

    /// Deletes every unretained local pack whose pack number satisfies `matching`
    /// (`odrfs purge`); retained ones are reported as kept. Base is never purged.
    /// Blocking: call it on the I/O executor (or use `purge(matching:)`).
    @discardableResult
    public func purgeNow(matching: @escaping (PackNumber) -> Bool) -> PurgeReport {
        var report = PurgeReport()
        report.kept = withState { state in
            state.slots.indices.filter { index in
                index > 0 && state.slots[index].isLocal && state.slots[index].retainCount > 0 && matching(PackNumber(UInt32(index)))
            }.map { manifest.packs[$0].id }
        }
        report.evicted = evictAll(reason: .requested, matching: matching)
        return report
    }

    /// Chooses victims with `EvictionPlanner` and deletes them. Returns bytes freed.
    func evict(freeing needed: Int64, reason: PurgeReason, matching: (PackNumber) -> Bool) -> Int64 {
        let victims = withState { state -> [Victim] in
            let plan = EvictionPlanner.plan(freeing: needed, from: candidates(state, matching: matching))
            return plan.map { take($0.key, from: &state) }
        }
        return delete(victims, reason: reason).reduce(0) { $0 + $1.bytes }
    }

    private func evictAll(reason: PurgeReason, matching: (PackNumber) -> Bool) -> [(id: String, bytes: Int64)] {
        let victims = withState { state -> [Victim] in
            candidates(state, matching: matching).filter { $0.priority >= 0 }.map { take($0.key, from: &state) }
        }
        return delete(victims, reason: reason)
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
    private func candidates(_ state: State, matching: (PackNumber) -> Bool) -> [EvictionCandidate] {
        var result: [EvictionCandidate] = []
        for index in state.slots.indices.dropFirst() {
            let slot = state.slots[index]
            guard slot.isLocal, slot.retainCount == 0, slot.download == nil, matching(PackNumber(UInt32(index))) else { continue }
            let pack = manifest.packs[index]
            result.append(EvictionCandidate(key: pack.sha256.hex, bytes: pack.bytes.value, priority: slot.priority, lastAccess: slot.lastAccess))
        }
        for orphan in state.orphans.values {
            result.append(EvictionCandidate(key: orphan.sha256, bytes: orphan.bytes, priority: -1, lastAccess: orphan.lastAccess))
        }
        return result
    }

    /// Marks a candidate gone under the lock and moves its file into the trash right away
    /// (one rename), so no open can find it and a new download of it published later is
    /// never deleted by mistake. Unlinking and the index row happen outside the lock.
    private func take(_ sha256: String, from state: inout State) -> Victim {
        state.evictionCount += 1
        if let orphan = state.orphans.removeValue(forKey: sha256) {
            state.cachedBytes -= orphan.bytes
            store.moveToTrash(sha256: sha256)
            return Victim(sha256: sha256, id: orphan.packID + " (older bundle version)", bytes: orphan.bytes, priority: -1, lastAccess: orphan.lastAccess)
        }
        let index = manifest.packs.firstIndex { $0.sha256.hex == sha256 }!
        state.slots[index].isLocal = false
        state.cachedBytes -= manifest.packs[index].bytes.value
        store.moveToTrash(sha256: sha256)
        return Victim(sha256: sha256, id: manifest.packs[index].id.rawValue, bytes: manifest.packs[index].bytes.value,
                      priority: state.slots[index].priority, lastAccess: state.slots[index].lastAccess)
    }

    /// Blocking (SQLite, unlink): runs on the I/O executor, outside the lock.
    private func delete(_ victims: [Victim], reason: PurgeReason) -> [(id: String, bytes: Int64)] {
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
        }
        return victims.map { ($0.id, $0.bytes) }
    }
}
