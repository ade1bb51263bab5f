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
                purgerWakeups.yield(.periodicCheck)
            }
        }
        defer { ticker.cancel() }
        for await reason in purgerEvents {
            if Task.isCancelled { break }
            // SQLite, statvfs and unlink: on the I/O executor, never on the cooperative pool.
            await io.run {
                self.saveAccesses()
                self.measureAvailableBytes()
                self.purgeForPressure(reason: reason)
            }
        }
    }

    /// Writes pending access times and counts to the cache index (batched: opens do
    /// not each cost a database write). Called by the purger and at shutdown.
    /// Blocking (SQLite): I/O executor only.
    public func saveAccesses() {
        let pending = withState { state -> [(sha256: String, lastAccess: Date, count: Int64)] in
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

    /// Sets (or with nil, clears) a tag's preservation priority override. It applies at
    /// once; the SQLite write runs on the I/O executor and stores the tag's value as it is
    /// when the write runs, so writes that overtake each other still leave the last one.
    public func setPreservationPriority(_ priority: Double?, for tag: Tag) {
        withState { state in
            state.priorityOverrides[tag] = priority
            Self.assignPriorities(&state, manifest: manifest)
        }
        withState { _ = $0.unsavedPriorities.insert(tag) }
        io.submit { [self] in savePriorities() }
    }

    /// Writes the priority overrides changed since the last save, each with its value at
    /// the time of writing. Blocking (SQLite): I/O executor only.
    func savePriorities() {
        let pending = withState { state -> [(Tag, Double?)] in
            defer { state.unsavedPriorities.removeAll() }
            return state.unsavedPriorities.map { ($0, state.priorityOverrides[$0]) }
        }
        for (tag, value) in pending {
            do {
                try store.index.setPriority(value, for: tag)
            } catch {
                logger.error("cannot save a preservation priority", metadata: ["tag": "\(tag)", "error": "\(error)"])
            }
        }
    }

    /// Every tag's effective preservation priority, in manifest order (one lock, no per-tag scans).
    public func tagPriorities() -> [(tag: String, priority: Double)] {
        let overrides = withState { $0.priorityOverrides }
        return manifest.tags.map { ($0.tag.name, overrides[$0.tag] ?? $0.preservationPriority) }
    }

    /// A tag's effective preservation priority.
    public func preservationPriority(of tag: Tag) -> Double {
        withState { $0.priorityOverrides[tag] } ?? manifest.preservationPriority(of: tag)
    }

    /// Flushes state and releases the cache for another mount.
    public func shutdown() async {
        purgerWakeups.finish()
        await io.run {
            self.saveAccesses()
            self.savePriorities()
            self.store.releaseLock()
        }
    }
}
