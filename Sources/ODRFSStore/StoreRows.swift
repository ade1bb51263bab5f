import Foundation
import Synchronization

/// What changed in a store's pack and copy rows since a sequence number
/// (``CacheIndex/storeChanges(since:)``): rows inserted or updated, rows removed, and the
/// sequence number to ask from next time. `isComplete`: `changed` is every row (a first
/// read, or one further behind than the removals the store keeps).
public struct StoreRowChanges: Sendable {
    public var sequence: Int64
    public var isComplete: Bool
    public var changed: [StorePurgePlan.Object] = []
    public var removed: [(sha256: String, isFileCopy: Bool)] = []
}

/// A mount's mirror of the store's pack and copy rows, the input of every store-wide purge
/// decision (issue 23: one decision over 100,000 objects within 10 ms). Reading 100,000
/// rows costs more than deciding; the mirror reads them once, then at each maintenance tick
/// and before each decision only what changed since (the store numbers every change: see
/// the `v7` migration). The objects stay in one array, updated in place, so a decision takes
/// them without a copy; positions are found by content hash and kind.
///
/// Thread-safe (one mutex, held for the apply only, never across the SQLite read);
/// refreshed on the I/O executor.
public final class StoreRows: Sendable {
    private struct State {
        var sequence: Int64 = 0
        var objects: [StorePurgePlan.Object] = []
        var positions: [Key: Int] = [:]
        var bytes: Int64 = 0
    }

    private struct Key: Hashable {
        var sha256: String
        var isFileCopy: Bool
    }

    private let state = Mutex(State())

    public init() {}

    /// Reads what changed since the last refresh from `index` and applies it; returns the
    /// objects and their total bytes as of now. The first refresh reads every row (about
    /// 100 ms for 100,000 rows here); later ones what changed.
    /// `rowsRead`: the changed rows this refresh read (every row, the first time).
    @discardableResult
    public func refresh(from index: CacheIndex) throws(StoreError) -> (objects: [StorePurgePlan.Object], bytes: Int64, rowsRead: Int) {
        let since = state.withLock { $0.sequence }
        let changes = try index.storeChanges(since: since)
        return state.withLock { state in
            // A concurrent refresh may have applied a newer read already.
            if changes.sequence > state.sequence || changes.isComplete { Self.apply(changes, to: &state) }
            return (state.objects, state.bytes, changes.changed.count + changes.removed.count)
        }
    }

    private static func apply(_ changes: StoreRowChanges, to state: inout State) {
        if changes.isComplete {
            state = State()
        }
        for (sha256, isFileCopy) in changes.removed {
            guard let position = state.positions.removeValue(forKey: Key(sha256: sha256, isFileCopy: isFileCopy)) else { continue }
            state.bytes = state.bytes.saturatingSubtract(state.objects[position].bytes)
            let last = state.objects.count - 1
            if position != last {
                state.objects[position] = state.objects[last]
                let moved = state.objects[position]
                state.positions[Key(sha256: moved.sha256, isFileCopy: moved.isFileCopy)] = position
            }
            state.objects.removeLast()
        }
        for object in changes.changed {
            let key = Key(sha256: object.sha256, isFileCopy: object.isFileCopy)
            if let position = state.positions[key] {
                state.bytes = state.bytes.saturatingSubtract(state.objects[position].bytes)
                state.objects[position] = object
            } else {
                state.positions[key] = state.objects.count
                state.objects.append(object)
            }
            state.bytes = state.bytes.saturatingAdd(object.bytes)
        }
        state.sequence = changes.sequence
    }
}

extension Int64 {
    func saturatingSubtract(_ other: Int64) -> Int64 {
        let (difference, overflow) = subtractingReportingOverflow(other)
        return overflow ? (other > 0 ? .min : .max) : difference
    }
}
