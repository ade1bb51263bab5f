import Foundation

/// A local pack the purger may delete: unretained, not base, not downloading.
public struct EvictionCandidate: Sendable, Equatable {
    /// Opaque to the planner (the resource manager uses the content hash).
    public var key: String
    public var bytes: Int64
    /// Preservation priority, 0…1 (highest of the pack's tags); packs of other bundle
    /// versions get -1 so they go first.
    public var priority: Double
    /// Last access; nil (never accessed, e.g. prefetched) sorts as oldest.
    public var lastAccess: Date?

    public init(key: String, bytes: Int64, priority: Double, lastAccess: Date?) {
        self.key = key
        self.bytes = bytes
        self.priority = priority
        self.lastAccess = lastAccess
    }
}

/// Chooses which packs to delete to free a number of bytes: ODR's order — lowest
/// preservation priority first, then least recently used — without over-purging.
///
/// Within a priority class, candidates go oldest first while each is no larger than
/// what is still needed. When the oldest remaining one is larger than the remaining
/// need, one pack finishes the job, and the smallest pack of that class that is large
/// enough is chosen (the oldest among equals): deleting a 12 MiB pack instead of a
/// 500 MiB one frees what is needed just as well. Only if no pack of the class is
/// large enough does the walk go on in LRU order (and then into the next class).
public enum EvictionPlanner {
    /// O(n log n): one sort, then one walk; the best-fit search runs at most once per plan
    /// (the pack it finds finishes the job).
    public static func plan(freeing needed: Int64, from candidates: [EvictionCandidate]) -> [EvictionCandidate] {
        guard needed > 0 else { return [] }
        let ordered = candidates.sorted(by: evictsBefore)
        var remaining = needed
        var chosen: [EvictionCandidate] = []
        var start = ordered.startIndex
        while remaining > 0 && start < ordered.endIndex {
            let classPriority = ordered[start].priority
            var end = start
            while end < ordered.endIndex && ordered[end].priority == classPriority { end += 1 }
            var next = start
            while remaining > 0 && next < end {
                let oldest = ordered[next]
                if oldest.bytes > remaining,
                   let bestFit = ordered[next..<end].filter({ $0.bytes >= remaining }).min(by: { $0.bytes < $1.bytes }) {
                    // It frees at least what remains: the plan is complete.
                    chosen.append(bestFit)
                    remaining -= bestFit.bytes
                } else {
                    chosen.append(oldest)
                    remaining -= oldest.bytes
                    next += 1
                }
            }
            start = end
        }
        return chosen
    }

    /// The eviction order: priority ascending, then last access ascending (never
    /// accessed first), then key for determinism.
    public static func evictsBefore(_ a: EvictionCandidate, _ b: EvictionCandidate) -> Bool {
        if a.priority != b.priority { return a.priority < b.priority }
        switch (a.lastAccess, b.lastAccess) {
        case (nil, .some): return true
        case (.some, nil): return false
        case let (.some(x), .some(y)) where x != y: return x < y
        default: return a.key < b.key
        }
    }
}
