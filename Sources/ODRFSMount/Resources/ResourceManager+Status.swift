import Foundation
import ODRFSCore
import ODRFSStore

/// Cache-wide figures for status displays.
public struct CacheStatus: Sendable {
    /// Bytes the cache holds against its budget: verified packs on disk (this bundle's and
    /// other versions'), their backing files, and the pinned metadata (`metadataBytes`).
    public var cachedBytes: Int64
    /// Of `cachedBytes`, the file indexes and manifest: pinned, never purged.
    public var metadataBytes: Int64 = 0
    /// Bytes reserved by downloads in flight.
    public var reservedBytes: Int64
    /// Bytes of packs of other bundle versions still cached.
    public var orphanBytes: Int64
    /// Bytes of retained (in-use) packs.
    public var inUseBytes: Int64
    public var limits: CacheLimits
    /// Free space on the cache's filesystem, if known.
    public var availableBytes: Int64?
    /// True when retained packs or pinned metadata hold the cache above its budget (they
    /// cannot be purged).
    public var isOverBudget: Bool
    /// Packs evicted since the mount started.
    public var evictionCount: Int
}

extension ResourceManager {
    public func state(of pack: PackNumber) -> PackState {
        table.read { Self.packState($0.slots[Int(pack.rawValue)]) }
    }

    /// A consistent snapshot of every pack, in manifest order.
    public func status() -> [PackStatus] {
        let slots = table.read { $0.slots }
        return zip(manifest.packs, slots).enumerated().map { offset, element in
            let (pack, slot) = element
            return PackStatus(
                number: PackNumber(UInt32(offset)), id: pack.id, tags: pack.tags, bytes: pack.bytes,
                state: Self.packState(slot), bytesDownloaded: ByteCount(slot.download?.bytesDone ?? 0),
                retainCount: slot.retainCount, lastAccess: slot.lastAccess, fetchCount: slot.fetchCount,
                preservationPriority: slot.priority
            )
        }
    }

    /// Never blocks: free space is the figure last measured on the I/O executor
    /// (by the maintenance loop every 2 s, and before each download).
    public func cacheStatus() -> CacheStatus {
        let available = purger.lastMeasuredAvailableBytes
        return table.read { state in
            let inUse = state.inUseBytes
            return CacheStatus(
                cachedBytes: state.budgetedBytes, metadataBytes: state.metadataBytes, reservedBytes: state.reservedBytes,
                orphanBytes: state.orphanBytes,
                inUseBytes: inUse, limits: limits, availableBytes: available,
                isOverBudget: limits.isOverBudget(cached: state.budgetedBytes, reserved: state.reservedBytes),
                evictionCount: state.evictionCount
            )
        }
    }

    static func packState(_ slot: CacheLedger.Slot) -> PackState {
        if slot.download != nil { return .downloading }
        if !slot.isLocal { return .notDownloaded }
        return slot.retainCount > 0 ? .inUse : .downloaded
    }
}
