import Foundation
import Logging
import ODRFSCore
import ODRFSFetch
import ODRFSStore

/// The machine-wide store's side of purging (issue 23, items 2 and 3). A mount of a store
/// obeys the store's own limits (`odrfs store config`, `store.json`) besides its
/// `--cache-size` (its bundle's cap): when the store's objects and every mount's
/// reservations are over them, it purges across bundles in ``ODRFSStore/StorePurgePlan``'s
/// order, from what every live mount published (`references`). A download reserves its
/// bytes in the store's index in the same transaction that checks for room, so downloads
/// by different mounts never overshoot together; a dead mount's reservations are dropped.
/// Every mount learns of the packs others evicted from the store's eviction log, at each
/// maintenance tick. All of it blocks (SQLite, statvfs, renames): on the I/O executor.
extension Purger {
    /// The store's limits, if this is a store mount and the store has any.
    private func storeLimits() -> CacheLimits? {
        guard store.isShared, let configuration = try? StoreConfiguration.read(storeRoot: store.layout.root),
              configuration.cacheSize != nil || configuration.minFree != nil else { return nil }
        return CacheLimits(budget: configuration.cacheSize.map(ByteCount.init), minimumFree: configuration.minFree.map(ByteCount.init))
    }

    /// Purges across the store's bundles if it is over its limits, counting `extra` more
    /// bytes about to be reserved. Returns the bytes freed. One mount of the store purges at
    /// a time: at a maintenance tick a mount skips its purge while another runs one, and a
    /// download that needs room (`waiting`) waits for it to end, then decides again.
    @discardableResult
    func purgeStore(extra: Int64 = 0, waiting: Bool = false) -> Int64 {
        guard let limits = storeLimits() else { return 0 }
        if let freed = store.purging(waiting: waiting, { purgeStore(limits: limits, extra: extra) }) { return freed }
        // Another mount is purging: this tick still brings this mount's mirror of the rows up
        // to date, so that when it does decide, it reads only the last moments' changes.
        _ = try? store.storeRows.refresh(from: store.index)
        return 0
    }

    private func purgeStore(limits: CacheLimits, extra: Int64) -> Int64 {
        let readStarted = ContinuousClock.now
        // The rows from this mount's mirror, brought up to date with what changed since the
        // last tick (every tick refreshes it, so a decision reads little); the mounts'
        // references parsed again only where they changed.
        let mounts = store.liveMounts()
        guard let rows = try? store.storeRows.refresh(from: store.index),
              let reserved = try? store.index.reservedBytes(liveMounts: Set(mounts.ids)) else { return 0 }
        let available = limits.minimumFree != nil ? store.availableBytes() : nil
        let needed = limits.bytesToFree(cached: rows.bytes, reserved: reserved.saturatingAdd(extra), available: available)
        guard needed > 0 else { return 0 }
        let decided = ContinuousClock.now
        let plan = StorePurgePlan.victims(freeing: needed, objects: rows.objects, bundles: mounts.bundles)
        let milliseconds = { (duration: Duration) in Double(duration.components.attoseconds) / 1e15 + Double(duration.components.seconds) * 1000 }
        logger.info("store purge decision", metadata: [
            "objects": "\(rows.objects.count)", "rows.read": "\(rows.rowsRead)", "bundles": "\(mounts.bundles.count)", "victims": "\(plan.count)", "needed": "\(needed)",
            "decision.ms": "\(String(format: "%.2f", milliseconds(ContinuousClock.now - decided)))",
            "reads.ms": "\(String(format: "%.2f", milliseconds(decided - readStarted)))",
        ])
        let stored = rows.bytes
        var freed: Int64 = 0
        var evicted: [String] = []
        let positions = packPositions()
        for victim in plan where freed < needed {
            guard evictFromStore(victim, positions: positions) else { continue }
            evicted.append(victim.sha256)
            freed = freed.saturatingAdd(victim.bytes)
        }
        store.emptyTrash()
        try? store.index.recordEvictions(evicted)
        if freed < needed {
            logger.warning("store over its limits: what is left is retained or base", metadata: [
                "store": "\(store.layout.root)", "store.bytes": "\(stored)", "store.reserved": "\(reserved)", "freed": "\(freed)",
            ])
        }
        return freed
    }

    /// Removes one victim of the store's plan: through this mount's ledger when it is one of
    /// its packs or orphans (so its books stay right), else directly. Returns whether it went.
    /// This revision's packs by content hash (built once per purge, not searched per victim).
    private func packPositions() -> [String: Int] {
        Dictionary(table.manifest.packs.enumerated().map { ($0.element.sha256.hex, $0.offset) }, uniquingKeysWith: { first, _ in first })
    }

    private func evictFromStore(_ victim: StorePurgePlan.Victim, positions: [String: Int]) -> Bool {
        if victim.isFileCopy { return store.removeSharedFile(sha256: victim.sha256) }
        let reason: CacheEvent.EvictionReason = victim.purgeClass == .unreferenced ? .update : .cacheSize
        // Through the ledger only what it counts: a pack of this bundle that another mount
        // published is not local in this ledger, and goes directly.
        let own = table.read { state -> QuotaPolicy.Key? in
            if let index = positions[victim.sha256], state.slots[index].isLocal { return .pack(index) }
            return state.orphans[victim.sha256] != nil ? .orphan(victim.sha256) : nil
        }
        let moved: Bool
        if let own {
            let chosen = QuotaPolicy.Victim(key: own, sha256: victim.sha256, id: id(of: own), bytes: victim.bytes, priority: 0,
                                            lastAccess: nil, reason: reason, rule: "store: " + victim.rule)
            moved = !table.evict(choosing: { _ in [chosen] }, trash: moveToTrash).isEmpty
            if moved {
                table.events.publish(CacheEvent(.evicted(CacheEvent.Eviction(pack: chosen.id, tags: tags(of: own), bytes: victim.bytes,
                                                                             reason: reason, rule: chosen.rule))))
                table.metrics.recordEviction(reason)
            }
        } else {
            moved = store.moveToTrashUnlessHeld(sha256: victim.sha256) == .moved
        }
        guard moved else { return false }
        try? store.index.removePack(sha256: victim.sha256)
        logger.notice("evicted pack from the store", metadata: [
            "sha256": "\(victim.sha256.prefix(16))", "pack.bytes": "\(victim.bytes)", "bundle": "\(victim.bundle ?? "none")", "rule": "\(victim.rule)",
        ])
        return true
    }

    private func id(of key: QuotaPolicy.Key) -> String {
        switch key {
        case .pack(let index): table.manifest.packs[index].id.rawValue
        case .orphan: "(not named by any mounted revision)"
        }
    }

    private func tags(of key: QuotaPolicy.Key) -> [Tag] {
        if case .pack(let index) = key { return table.manifest.packs[index].tags }
        return []
    }

    /// Before a download: reserves its bytes in the store, purging across bundles first if
    /// they do not fit. Over the limits only when what is left is retained or base (as a
    /// mount's own budget allows), never because two mounts checked at once.
    func reserveInStore(_ pack: PackDescriptor) {
        guard store.isShared, let mount = store.mountID?.rawValue else { return }
        let limits = storeLimits()
        let available = limits?.minimumFree != nil ? store.availableBytes() : nil
        let bytes = pack.bytes.value
        for attempt in 0..<3 {
            let reserved = try? store.index.reserve(mount: mount, sha256: pack.sha256.hex, bytes: bytes) { stored, reserved in
                guard let limits, attempt < 2 else { return true }
                return limits.bytesToFree(cached: stored, reserved: reserved.saturatingAdd(bytes), available: available) == 0
            }
            if reserved != false { return }
            purgeStore(extra: bytes, waiting: true)
        }
    }

    /// After a download: its reservation in the store ends.
    func releaseStoreReservation(_ pack: PackDescriptor) {
        guard store.isShared, let mount = store.mountID?.rawValue else { return }
        try? store.index.releaseReservation(mount: mount, sha256: pack.sha256.hex)
    }

    /// Forgets this mount's local packs and orphans that other mounts evicted from the store
    /// since the last call, so its books match the disk.
    func learnStoreEvictions() {
        guard store.isShared else { return }
        let since = lastEvictionSeen.withLock { $0 }
        guard let (hashes, last) = try? store.index.evictions(after: since ?? .max) else { return }
        lastEvictionSeen.withLock { $0 = since == nil ? (try? store.index.latestEviction()) ?? 0 : last }
        guard since != nil, !hashes.isEmpty else { return }
        let positions = packPositions()
        for hash in Set(hashes) where access(store.layout.packsDirectory + "/" + hash + ".tar", F_OK) != 0 {
            let own = table.read { state -> QuotaPolicy.Key? in
                if let index = positions[hash] {
                    return state.slots[index].isLocal && state.slots[index].retainCount == 0 && state.slots[index].download == nil ? .pack(index) : nil
                }
                return state.orphans[hash] != nil ? .orphan(hash) : nil
            }
            guard let own else { continue }
            let gone = QuotaPolicy.Victim(key: own, sha256: hash, id: id(of: own), bytes: 0, priority: 0, lastAccess: nil, reason: .cacheSize, rule: "evicted by another mount of the store")
            // The pack file is gone already: only this mount's backing files go with it.
            _ = table.evict(choosing: { _ in [gone] }, trash: { sha256, offsets in
                for offset in offsets { self.store.moveBackingFileToTrash(sha256: sha256, offset: offset) }
                return true
            })
        }
    }
}

extension Int64 {
    func saturatingAdd(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }
}
