import Foundation
import ODRFSCore
import ODRFSStore

/// The cache's purge decision, apart from the ledger that keeps the books (as CernVM-FS
/// keeps its quota manager apart from its cache): a pure value that looks at a snapshot
/// of the ``CacheLedger`` and says how much must go and which packs, in order, each with
/// the reason and the rule that chose it. The ``Purger`` only carries its answers out.
///
/// The rules, in one place:
/// - *when*: pressure is the budget (reservations counted) or the free-space floor
///   crossed; a purge cleans down to the low watermarks (``ODRFSStore/CacheLimits``); a
///   release only makes the purger look when there is a budget (``shouldLook(after:)``);
/// - *what*: local, unretained, not downloading, never base; packs only older bundle
///   versions name (orphans, priority -1) first, then lowest preservation priority, then
///   least recently used, never-accessed first; within a class, one pack large enough
///   rather than several (``ODRFSStore/EvictionPlanner``);
/// - *on request* (`odrfs purge`): every matching unretained pack of this version.
///
/// O(n log n) per run in the packs of the bundle (one pass to collect candidates, one
/// sort, one walk), never a scan per victim.
struct QuotaPolicy: Sendable {
    let limits: CacheLimits

    /// What a victim is in the ledger.
    enum Key: Sendable, Equatable {
        /// A pack of the mounted revision, by its index in the manifest.
        case pack(Int)
        /// A pack of another bundle version, by content hash.
        case orphan(String)
    }

    /// One pack to evict, why, and by which rule of the eviction order.
    struct Victim: Sendable {
        var key: Key
        var sha256: String
        /// The pack id for logs and events ("(older bundle version)" for an orphan).
        var id: String
        /// The pack's bytes plus its backing files'.
        var bytes: Int64
        var priority: Double
        var lastAccess: Date?
        var reason: CacheEvent.EvictionReason
        var rule: String
    }

    /// Bytes to free now (0: no pressure). `available`: free bytes on the cache's filesystem, if measured.
    func bytesToFree(_ state: CacheLedger.State, available: Int64?) -> Int64 {
        limits.bytesToFree(cached: state.budgetedBytes, reserved: state.reservedBytes, available: available)
    }

    /// Whether ``bytesToFree(_:available:)`` needs a free-space figure.
    var watchesFreeSpace: Bool { limits.minimumFree != nil }

    /// Whether the cache is over `--cache-size` (reservations counted).
    func isOverBudget(_ state: CacheLedger.State) -> Bool {
        limits.isOverBudget(cached: state.budgetedBytes, reserved: state.reservedBytes)
    }

    /// Whether a prefetch of `bytes` more fits within the budget (reservations counted):
    /// prefetch never pushes the cache over it, only what users open does.
    func admitsPrefetch(of bytes: Int64, into state: CacheLedger.State) -> Bool {
        guard let budget = limits.budget else { return true }
        return ByteCount(state.budgetedBytes) + ByteCount(state.reservedBytes) + ByteCount(bytes) <= budget
    }

    /// Whether a wake-up for `reason` may find pressure: a release frees nothing on disk,
    /// it only lets a pack held over the budget go, so without a budget it never does.
    func shouldLook(after reason: PurgeReason) -> Bool {
        reason != .afterRelease || limits.budget != nil
    }

    /// Victims freeing at least `needed` bytes (all candidates if they hold less), in order.
    func victims(freeing needed: Int64, from state: CacheLedger.State, reason: PurgeReason,
                 matching: (PackNumber) -> Bool = { _ in true }) -> [Victim] {
        guard needed > 0 else { return [] }
        let reported = reason.evictionReason(overBudget: isOverBudget(state))
        let candidates = Self.candidates(state, matching: matching)
        let plan = EvictionPlanner.plan(freeing: needed, from: candidates.map(\.candidate))
        let keys = Dictionary(uniqueKeysWithValues: candidates.map { ($0.candidate.key, $0.victim) })
        return plan.compactMap { keys[$0.key] }.map { Self.explained($0, reported) }
    }

    /// `odrfs purge`: every unretained local pack of this version that `matching` selects
    /// (orphans are not named by any tag), in manifest order.
    func victimsOnRequest(from state: CacheLedger.State, matching: (PackNumber) -> Bool) -> [Victim] {
        Self.candidates(state, matching: matching)
            .filter { $0.victim.priority >= 0 }
            .map { Self.explained($0.victim, .manual) }
    }

    /// Local packs `matching` selects that a purge request must keep: they are retained.
    func keptOnRequest(from state: CacheLedger.State, matching: (PackNumber) -> Bool) -> [PackID] {
        state.slots.indices.filter { index in
            !state.manifest.isBase(PackNumber(UInt32(index))) && state.slots[index].isLocal && state.slots[index].retainCount > 0 && matching(PackNumber(UInt32(index)))
        }.map { state.manifest.packs[$0].id }
    }

    /// Eviction candidates: local, unretained, not base, not downloading; plus packs of
    /// other bundle versions (priority -1, first to go).
    private static func candidates(_ state: CacheLedger.State, matching: (PackNumber) -> Bool) -> [(candidate: EvictionCandidate, victim: Victim)] {
        var result: [(candidate: EvictionCandidate, victim: Victim)] = []
        for index in state.slots.indices where !state.manifest.isBase(PackNumber(UInt32(index))) {
            let slot = state.slots[index]
            guard slot.isLocal, slot.retainCount == 0, slot.download == nil, matching(PackNumber(UInt32(index))) else { continue }
            let pack = state.manifest.packs[index]
            let victim = Victim(key: .pack(index), sha256: pack.sha256.hex, id: pack.id.rawValue, bytes: pack.bytes.value + slot.backingBytes,
                                priority: slot.priority, lastAccess: slot.lastAccess, reason: .manual, rule: "")
            result.append((EvictionCandidate(key: victim.sha256, bytes: victim.bytes, priority: victim.priority, lastAccess: victim.lastAccess), victim))
        }
        for orphan in state.orphans.values {
            let victim = Victim(key: .orphan(orphan.sha256), sha256: orphan.sha256, id: orphan.packID + " (older bundle version)",
                                bytes: orphan.bytes, priority: -1, lastAccess: orphan.lastAccess, reason: .manual, rule: "")
            result.append((EvictionCandidate(key: orphan.sha256, bytes: orphan.bytes, priority: -1, lastAccess: orphan.lastAccess), victim))
        }
        return result
    }

    /// Fills in why and by which rule. A pack only older bundle versions named was left
    /// behind by an update: evicted for it (whatever pressure made room now), unless a
    /// purge asked for it by name.
    private static func explained(_ victim: Victim, _ reported: CacheEvent.EvictionReason) -> Victim {
        var victim = victim
        victim.reason = victim.priority < 0 && reported != .manual ? .update : reported
        if victim.reason == .manual {
            victim.rule = "purge request"
        } else if victim.priority < 0 {
            victim.rule = "older bundle version first"
        } else {
            let access = victim.lastAccess.map { $0.formatted(.iso8601) } ?? "never"
            victim.rule = "lowest preservation priority first (\(victim.priority)), then least recently used (last access \(access))"
        }
        return victim
    }
}
