import Foundation
import Logging
import ODRFSCore
import ODRFSStore

extension ResourceManager {
    /// The background purger: wakes after each download, when a retain ends, and on a
    /// timer (free space can shrink because of other programs); writes access times
    /// to the index and purges under pressure. Runs until the task is cancelled.
    public func runMaintenance(interval: Duration = .seconds(2)) async {
        let ticker = Task { [purgerWakeups] in
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                purgerWakeups.yield("timer")
            }
        }
        defer { ticker.cancel() }
        for await reason in purgerEvents {
            if Task.isCancelled { break }
            saveAccesses()
            purgeForPressure(reason: reason == "timer" ? "periodic check" : "after \(reason)")
        }
    }

    /// Writes pending access times and counts to the cache index (batched: opens do
    /// not each cost a database write). Called by the purger and at shutdown.
    public func saveAccesses() {
        let pending = state.withLock { state -> [(sha256: String, lastAccess: Date, count: Int64)] in
            var pending: [(sha256: String, lastAccess: Date, count: Int64)] = []
            for index in state.slots.indices where state.slots[index].unsavedAccesses > 0 {
                guard let lastAccess = state.slots[index].lastAccess else { continue }
                pending.append((manifest.packs[index].sha256.hex, lastAccess, state.slots[index].unsavedAccesses))
                state.slots[index].unsavedAccesses = 0
            }
            return pending
        }
        do {
            try store.index.recordAccesses(pending)
        } catch {
            logger.error("cannot save access times", metadata: ["error": "\(error)"])
        }
    }

    /// Sets (or with nil, clears) a tag's preservation priority override, persisted.
    public func setPreservationPriority(_ priority: Double?, for tag: Tag) throws(StoreError) {
        try store.index.setPriority(priority, for: tag)
        state.withLock { state in
            state.priorityOverrides[tag] = priority
            Self.assignPriorities(&state, manifest: manifest)
        }
    }

    /// Every tag's effective preservation priority, in manifest order (one lock, no per-tag scans).
    public func tagPriorities() -> [(tag: String, priority: Double)] {
        let overrides = state.withLock { $0.priorityOverrides }
        return manifest.tags.map { ($0.tag.name, overrides[$0.tag] ?? $0.preservationPriority) }
    }

    /// A tag's effective preservation priority.
    public func preservationPriority(of tag: Tag) -> Double {
        state.withLock { $0.priorityOverrides[tag] } ?? manifest.preservationPriority(of: tag)
    }

    /// Flushes state and releases the cache for another mount.
    public func shutdown() {
        purgerWakeups.finish()
        saveAccesses()
        store.releaseLock()
    }
}
