import Foundation
import Logging
import ODRFSCore
import ODRFSStore

extension ResourceManager {
    /// The background purger: wakes after each download, when a retain ends, and on a
    /// timer (free space can shrink because of other programs); writes access times
    /// to the index and purges under pressure. Runs until the task is cancelled.
    public func runMaintenance(interval: Duration = .seconds(2)) async {
        let ticker = Task { [purger] in
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                purger.wake(.periodicCheck)
            }
        }
        defer { ticker.cancel() }
        for await reason in purger.events {
            if Task.isCancelled { break }
            // SQLite, statvfs and unlink: on the I/O executor, never on the cooperative pool.
            await io.run {
                self.saveAccesses()
                self.purger.measureAvailableBytes()
                self.measureMetadata()
                self.purger.learnStoreEvictions()
                self.table.dropIdleHolds()
                self.publishToStore()
                self.purger.purgeForPressure(reason: reason)
                self.purger.purgeStore()
            }
        }
    }

    /// In a store: records this revision's packs with their preservation priorities and
    /// whether the mount is running, when that changed since the last time (see
    /// `PackStore.recordReferences`). Blocking: I/O executor only.
    func publishToStore() {
        guard store.isShared else { return }
        let (priorities, running) = table.read { state in (state.slots.map(\.priority), state.inUseBytes > 0) }
        let changed = published.withLock { last in
            defer { last = (priorities, running) }
            return last.map { $0.priorities != priorities || $0.running != running } ?? true
        }
        guard changed else { return }
        let base = Set(manifest.basePacks.map { Int($0.rawValue) })
        store.recordReferences(manifest.packs.enumerated().map { ($0.element.sha256.hex, priorities[$0.offset], base.contains($0.offset)) },
                               running: running)
    }

    /// The store's `min_free` (`odrfs store config`), if this is a store mount and it has
    /// one. Blocking (reads `store.json`): I/O executor only.
    func storeMinimumFree() -> ByteCount? {
        guard store.isShared, let configuration = try? StoreConfiguration.read(storeRoot: store.layout.root) else { return nil }
        return configuration.minFree.map(ByteCount.init)
    }

    /// Writes pending access times and counts to the cache index (batched: opens do
    /// not each cost a database write). Called by the purger and at shutdown.
    /// Blocking (SQLite): I/O executor only.
    public func saveAccesses() {
        let pending = table.takeUnsavedAccesses()
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
        table.setPriorityOverride(priority, for: tag)
        io.submit { [self] in savePriorities() }
    }

    /// ``setPreservationPriority(_:for:)``, returning once the override is on stable storage
    /// (`odrfs priority --set`: a power cut after the command returns cannot undo it).
    /// A failed write throws: the caller must not report a durable change that is not.
    public func setPreservationPriorityDurably(_ priority: Double?, for tag: Tag) async throws(StoreError) {
        // Not marked unsaved: written below (a failed write marks it, for the next save).
        table.setPriorityOverride(priority, for: tag, markingUnsaved: false)
        try await io.run { [self] () throws(StoreError) in
            // The tag's value when the write runs, as in `savePriorities`.
            let value = table.read { $0.priorityOverrides[tag] }
            do throws(StoreError) {
                try store.bundleIndex.setPriority(value, for: tag)
            } catch {
                logger.error("cannot save a preservation priority", metadata: ["tag": "\(tag)", "error": "\(error)"])
                // Left for the next periodic save to retry.
                table.markPriorityUnsaved(tag)
                throw error
            }
        }
    }

    /// Writes the priority overrides changed since the last save, each with its value at
    /// the time of writing. Blocking (SQLite): I/O executor only.
    func savePriorities() {
        let pending = table.takeUnsavedPriorities()
        for (tag, value) in pending {
            do {
                try store.bundleIndex.setPriority(value, for: tag)
            } catch {
                logger.error("cannot save a preservation priority", metadata: ["tag": "\(tag)", "error": "\(error)"])
            }
        }
    }

    /// Every tag's effective preservation priority, in manifest order (one lock, no per-tag scans).
    public func tagPriorities() -> [(tag: String, priority: Double)] {
        let overrides = table.read { $0.priorityOverrides }
        return manifest.tags.map { ($0.tag.name, overrides[$0.tag] ?? $0.preservationPriority) }
    }

    /// A tag's effective preservation priority.
    public func preservationPriority(of tag: Tag) -> Double {
        table.read { $0.priorityOverrides[tag] } ?? manifest.preservationPriority(of: tag)
    }

    /// Flushes state and releases the cache for another mount.
    public func shutdown() async {
        purger.finish()
        await io.run {
            self.saveAccesses()
            self.savePriorities()
            self.store.releaseLock()
        }
    }
}

extension ResourceManager {
    /// Whether prefetching `pack` keeps the cache within its budget (the quota policy decides).
    func prefetchFits(_ pack: PackNumber) -> Bool {
        let bytes = manifest.pack(pack).bytes.value
        return table.read { purger.policy.admitsPrefetch(of: bytes, into: $0) }
    }

    /// `purgeNow` on the I/O executor, for callers in tasks (the control plane).
    public func purge(matching: @escaping @Sendable (PackNumber) -> Bool) async -> PurgeReport {
        await io.run { self.purger.purgeNow(matching: matching) }
    }

    /// Deletes every unretained local pack whose pack number satisfies `matching`
    /// (`odrfs purge`); retained ones are reported as kept. Base is never purged.
    /// Blocking: call it on the I/O executor (or use `purge(matching:)`).
    @discardableResult
    public func purgeNow(matching: @escaping (PackNumber) -> Bool) -> PurgeReport {
        purger.purgeNow(matching: matching)
    }

    /// Deletes unretained packs if the cache is above its budget or below its free-space
    /// floor, down to the low watermarks. Returns the bytes freed. Blocking: I/O executor.
    @discardableResult
    public func purgeForPressure(reason: PurgeReason) -> Int64 {
        purger.purgeForPressure(reason: reason)
    }
}
