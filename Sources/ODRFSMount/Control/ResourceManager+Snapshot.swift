import Foundation
import ODRFSControl
import ODRFSCore

extension ResourceManager {
    /// The status the control plane and `.odrfs/status` show: per pack, per tag, cache totals.
    public func snapshot() -> StatusSnapshot {
        let packs = status().map { pack in
            let variant = manifest.pack(pack.number).variantAssignment
            return StatusSnapshot.PackEntry(
                id: pack.id.rawValue, tags: pack.tags.map(\.name), bytes: pack.bytes.value,
                state: StatusSnapshot.State(rawValue: pack.state.rawValue) ?? .notDownloaded,
                percent: pack.state == .downloading && pack.bytes.value > 0 ? Int(pack.bytesDownloaded.value * 100 / pack.bytes.value) : nil,
                retainCount: pack.retainCount, lastAccess: pack.lastAccess,
                preservationPriority: pack.preservationPriority, fetchCount: pack.fetchCount,
                variant: variant.isEmpty ? nil : variant.dictionary
            )
        }
        let cache = cacheStatus()
        var snapshot = StatusSnapshot(
            packs: packs,
            tagPriorities: tagPriorities(),
            cache: StatusSnapshot.CacheEntry(
                cachedBytes: cache.cachedBytes, reservedBytes: cache.reservedBytes, orphanBytes: cache.orphanBytes,
                budget: cache.limits.budget?.value, minimumFree: cache.limits.minimumFree?.value,
                availableBytes: cache.availableBytes, inUseBytes: cache.inUseBytes,
                maximumInUse: cache.limits.maximumInUse.value, isOverBudget: cache.isOverBudget,
                evictionCount: cache.evictionCount, wireBytes: downloader.wire.bytes,
                metadataBytes: cache.metadataBytes
            )
        )
        snapshot.describeOrigin(downloader.origin)
        let check = updateCheck.current
        snapshot.revision = manifest.revision
        snapshot.availableRevision = check.availableRevision
        snapshot.lastUpdateCheck = check.lastCheck
        snapshot.variants = Dictionary(uniqueKeysWithValues: selectedVariants.map { ($0.key.name, $0.value.name) })
        return snapshot
    }

    /// Bytes local (or downloaded so far) and in total, over `packs`.
    public func progress(of packs: [PackNumber]) -> (completed: Int64, total: Int64) {
        // Only the requested slots, under the lock (no copy of the whole table): the
        // control plane asks this for every waiting request.
        let slots = table.read { state in
            packs.map { state.slots[Int($0.rawValue)] }.map { (isLocal: $0.isLocal, downloaded: $0.download?.bytesDone) }
        }
        // Saturating sums: pack sizes come from the manifest.
        func add(_ a: Int64, _ b: Int64) -> Int64 {
            let (sum, overflow) = a.addingReportingOverflow(b)
            return overflow ? .max : sum
        }
        var completed: Int64 = 0
        var total: Int64 = 0
        for (pack, slot) in zip(packs, slots) {
            let bytes = manifest.packs[Int(pack.rawValue)].bytes.value
            total = add(total, bytes)
            if let downloaded = slot.downloaded {
                completed = add(completed, downloaded)
            } else if slot.isLocal {
                completed = add(completed, bytes)
            }
        }
        return (completed, total)
    }
}
