import Foundation
import ODRFSCore
import ODRFSStore

extension CacheLedger {
    /// One pack of the mounted revision, as the ledger sees it. Every field is set only
    /// by the ledger's intents below (`fileprivate(set)`): readers get copies.
    struct Slot {
        fileprivate(set) var isLocal = false
        fileprivate(set) var retainCount = 0
        fileprivate(set) var lastAccess: Date?
        /// Accesses not yet written to the cache index.
        fileprivate(set) var unsavedAccesses: Int64 = 0
        /// The coordinator's record of the download in flight. Its presence is the pack's
        /// reservation (``State/reserve(_:for:)`` to ``State/settleDownload(_:published:fetched:)``);
        /// its contents (waiters, progress) change through ``State/updateDownload(_:_:)``.
        fileprivate(set) var download: DownloadCoordinator.Download?
        fileprivate(set) var fetchCount = 0
        fileprivate(set) var priority: Double = 0
        /// Passthrough backing files copied out of this pack: pack offset → bytes. Counted
        /// in `cachedBytes` while they exist; evicted with the pack.
        fileprivate(set) var backingFiles: [Int64: Int64] = [:]
        var backingBytes: Int64 { backingFiles.values.reduce(0, +) }
    }

    /// Everything the ledger owns. A value: the ledger keeps the one live copy under its
    /// lock; anyone else holds a snapshot. Only the intents in this file change it, and
    /// each keeps the invariants that ``violations()`` lists.
    struct State {
        let manifest: Manifest
        let limits: CacheLimits
        /// Where retains and releases are announced (its lock is a leaf).
        let events: CacheEvents
        private(set) var slots: [Slot]
        /// Verified packs of other bundle versions, by content hash: evicted first.
        private(set) var orphans: [String: CachedPack]
        /// Local packs', their backing files' and orphans' bytes: what is on disk.
        private(set) var cachedBytes: Int64 = 0
        /// Pinned file indexes and manifests, as last measured on the I/O executor: never
        /// evicted, not in `cachedBytes`, but counted against the budget (`budgetedBytes`).
        private(set) var metadataBytes: Int64 = 0
        /// Bytes of the downloads in flight.
        private(set) var reservedBytes: Int64 = 0
        /// Bytes of packs with a retain count above zero.
        private(set) var inUseBytes: Int64 = 0
        private(set) var priorityOverrides: [Tag: Double]
        /// Tags whose override changed since it was last written to the cache index.
        private(set) var unsavedPriorities: Set<Tag> = []
        private(set) var evictionCount = 0
        /// Descriptors of local packs kept open between opens (`CacheLedger+KeptFiles.swift`).
        private(set) var keptFiles = KeptFiles()
        /// In a machine-wide store, the shared lock on each retained pack's file that keeps
        /// other mounts from evicting it (``ODRFSStore/PackHold``): taken when a retained pack
        /// is local, kept after its last release until the next maintenance tick
        /// (``dropIdleHolds()``, at most 2 s) so that a file opened and closed in a loop does
        /// not cost an `open` and a `flock` each time, and dropped at once when this mount
        /// evicts the pack or finds it gone.
        private(set) var holds: [Int: PackHold] = [:]
        /// Takes a ``ODRFSStore/PackHold`` on a pack file by content hash (nil in a private cache).
        let hold: @Sendable (String) -> PackHold?
        /// Whether holds outlive the last release until ``dropIdleHolds()``: not in a retired
        /// revision's ledger, whose maintenance no longer runs.
        private(set) var holdsLinger = true

        /// Starts from what the cache holds: `verified` by content hash (this version's
        /// packs become local slots, the rest orphans).
        init(manifest: Manifest, limits: CacheLimits, events: CacheEvents, verified: [String: CachedPack], priorityOverrides: [Tag: Double],
             hold: @escaping @Sendable (String) -> PackHold? = { _ in nil }) {
            self.manifest = manifest
            self.hold = hold
            self.limits = limits
            self.events = events
            var orphans = verified
            slots = manifest.packs.map { pack in
                var slot = Slot()
                if let record = orphans.removeValue(forKey: pack.sha256.hex) {
                    slot.isLocal = true
                    slot.lastAccess = record.lastAccess
                }
                return slot
            }
            self.orphans = orphans
            self.priorityOverrides = priorityOverrides
            cachedBytes = verified.values.reduce(0) { $0 + $1.bytes }
            assignPriorities()
        }

        private func bytes(_ index: Int) -> Int64 { manifest.packs[index].bytes.value }

        // MARK: Retains

        /// Takes one retain and counts an access. Returns true when this retain carried the
        /// packs in use over `--max-in-use` (the caller logs it; opens are never refused).
        @discardableResult
        mutating func retain(_ index: Int, at now: Date) -> Bool {
            var crossed = false
            if slots[index].retainCount == 0 {
                inUseBytes += bytes(index)
                crossed = inUseBytes > limits.maximumInUse.value && inUseBytes - bytes(index) <= limits.maximumInUse.value
                events.publish(CacheEvent(.retained(manifest.packs[index])))
            }
            slots[index].retainCount += 1
            holdIfRetained(index)
            slots[index].lastAccess = now.cacheIndexPrecision
            slots[index].unsavedAccesses += 1
            return crossed
        }

        /// Drops one retain; more releases than retains are ignored (never negative).
        mutating func release(_ index: Int) -> ReleaseOutcome {
            guard slots[index].retainCount > 0 else { return .underflow }
            slots[index].retainCount -= 1
            if slots[index].retainCount == 0 {
                inUseBytes -= bytes(index)
                if !holdsLinger { holds[index] = nil }
                events.publish(CacheEvent(.released(manifest.packs[index])))
            }
            return .released(nowUnretained: slots[index].retainCount == 0)
        }

        /// Drops the holds of packs no longer retained (each maintenance tick).
        mutating func dropIdleHolds() {
            for index in holds.keys where slots[index].retainCount == 0 { holds[index] = nil }
        }

        /// Takes the store-wide hold of a retained pack once its file is in place (a pack
        /// retained while it downloads is held when it is published).
        private mutating func holdIfRetained(_ index: Int) {
            guard slots[index].retainCount > 0, slots[index].isLocal, holds[index] == nil else { return }
            holds[index] = hold(manifest.packs[index].sha256.hex)
        }

        // MARK: Downloads

        /// Reserves the pack's bytes for a download about to start (so concurrent downloads
        /// cannot overshoot together) and keeps the coordinator's record of it.
        mutating func reserve(_ index: Int, for download: DownloadCoordinator.Download) {
            precondition(slots[index].download == nil && !slots[index].isLocal, "reserving a local or downloading pack")
            slots[index].download = download
            reservedBytes += bytes(index)
        }

        /// Changes the coordinator's record of the download in flight, if there is one.
        @discardableResult
        mutating func updateDownload<Value>(_ index: Int, _ body: (inout DownloadCoordinator.Download) -> Value) -> Value? {
            guard slots[index].download != nil else { return nil }
            return body(&slots[index].download!)
        }

        /// Ends the download's reservation. `published`: its file is now the verified pack
        /// (renamed into place), so the pack is local, counted, and its file kept for
        /// readers; `fetched`: it came from the origin (counted as a fetch). Returns the
        /// download's record and a kept descriptor that gave way (drop it outside the lock).
        /// Counts a fetch of pack `index` made before this ledger existed (a cold mount's
        /// early install, `EarlyInstall`): the pack was found local when the ledger was made.
        mutating func countEarlyFetch(_ index: Int) {
            slots[index].fetchCount += 1
        }

        mutating func settleDownload(_ index: Int, published: Bool, fetched: Bool) -> (DownloadCoordinator.Download?, dropped: VerifiedFile?) {
            guard let download = slots[index].download else { return (nil, nil) }
            slots[index].download = nil
            reservedBytes -= bytes(index)
            guard published else { return (download, nil) }
            slots[index].isLocal = true
            cachedBytes += bytes(index)
            if fetched { slots[index].fetchCount += 1 }
            holdIfRetained(index)
            // The published pack is this very file (renamed): later opens share it.
            let dropped = download.file.flatMap { keep($0, for: index).dropped }
            return (download, dropped)
        }

        /// A cached copy verified outside any download is in place: local, if no download
        /// runs and it was not local already. Returns whether it was made local.
        mutating func publishVerifiedCopy(_ index: Int, lastAccess: Date?) -> Bool {
            guard !slots[index].isLocal, slots[index].download == nil else { return false }
            slots[index].isLocal = true
            cachedBytes += bytes(index)
            noteAccess(index, ifNoneSince: lastAccess)
            holdIfRetained(index)
            return true
        }

        /// The cached copy vanished: remote again. Returns whether it was local and the
        /// kept descriptor it drops.
        mutating func markMissing(_ index: Int) -> (wasLocal: Bool, dropped: VerifiedFile?) {
            guard slots[index].download == nil, slots[index].isLocal else { return (false, nil) }
            holds[index] = nil
            slots[index].isLocal = false
            cachedBytes -= bytes(index)
            return (true, keptFiles.drop(index))
        }

        /// Gives an unaccessed pack the last access `date` (a record read back, the same
        /// pack of the previous revision).
        mutating func noteAccess(_ index: Int, ifNoneSince date: Date?) {
            if slots[index].lastAccess == nil { slots[index].lastAccess = date }
        }

        /// Hands over the accesses not yet saved (sha256, last access, count).
        mutating func takeUnsavedAccesses() -> [(sha256: String, lastAccess: Date, count: Int64)] {
            var pending: [(sha256: String, lastAccess: Date, count: Int64)] = []
            for index in slots.indices where slots[index].unsavedAccesses > 0 {
                guard let lastAccess = slots[index].lastAccess else { continue }
                pending.append((manifest.packs[index].sha256.hex, lastAccess, slots[index].unsavedAccesses))
                slots[index].unsavedAccesses = 0
            }
            return pending
        }

        // MARK: Backing files, eviction

        /// Counts a passthrough backing file of local pack `index` once `place` (a rename
        /// into `files/`, run here so the file exists exactly while it is counted) succeeds.
        mutating func attachBackingFile(_ index: Int, offset: Int64, bytes size: Int64, place: () -> Bool) -> Bool {
            guard slots[index].isLocal, slots[index].backingFiles[offset] == nil, place() else { return false }
            slots[index].backingFiles[offset] = size
            cachedBytes += size
            return true
        }

        /// Removes a victim the quota policy chose: `trash` moves its files out of sight
        /// (a rename, under the lock, so no open finds it and a later publish of the same
        /// pack is never deleted by mistake) and returns false when another mount of the
        /// store holds the pack (then nothing changes). Never a retained, downloading or
        /// base pack.
        mutating func evict(_ victim: QuotaPolicy.Victim, trash: (_ sha256: String, _ backingOffsets: [Int64]) -> Bool) -> Bool {
            switch victim.key {
            case .orphan(let sha256):
                guard orphans[sha256] != nil, trash(sha256, []), let orphan = orphans.removeValue(forKey: sha256) else { return false }
                cachedBytes -= orphan.bytes
            case .pack(let index):
                guard !manifest.isBase(PackNumber(UInt32(index))), slots[index].isLocal, slots[index].retainCount == 0, slots[index].download == nil else { return false }
                // This mount's own lingering hold would keep its eviction out.
                holds[index] = nil
                // Its backing files go with it (kernel-held ones live on until their last close).
                guard trash(manifest.packs[index].sha256.hex, Array(slots[index].backingFiles.keys)) else { return false }
                slots[index].isLocal = false
                // Unretained, so only the kept slot holds its descriptor: closed here, with
                // the rename into trash/, so that its space is freed with it.
                keptFiles.drop(index)
                cachedBytes -= bytes(index) + slots[index].backingBytes
                slots[index].backingFiles = [:]
            }
            evictionCount += 1
            return true
        }

        // MARK: Metadata, priorities

        /// Records the pinned metadata's bytes; returns the previous figure.
        mutating func setMetadataBytes(_ bytes: Int64) -> Int64 {
            defer { metadataBytes = bytes }
            return metadataBytes
        }

        /// Sets (nil: clears) a tag's override, marks it unsaved (unless the caller writes it
        /// itself), and recomputes priorities.
        mutating func setPriorityOverride(_ priority: Double?, for tag: Tag, markingUnsaved: Bool = true) {
            priorityOverrides[tag] = priority
            if markingUnsaved { unsavedPriorities.insert(tag) }
            assignPriorities()
        }

        /// A write of `tag`'s override failed: the next save tries again.
        mutating func markPriorityUnsaved(_ tag: Tag) { unsavedPriorities.insert(tag) }

        /// Hands over the overrides changed since the last save, with their current values.
        mutating func takeUnsavedPriorities() -> [(Tag, Double?)] {
            defer { unsavedPriorities.removeAll() }
            return unsavedPriorities.map { ($0, priorityOverrides[$0]) }
        }

        /// A pack's preservation priority is the highest of its tags' (override, else the
        /// manifest's default); base resources are never purged, so theirs is irrelevant.
        private mutating func assignPriorities() {
            var defaults: [Tag: Double] = [:]
            defaults.reserveCapacity(manifest.tags.count)
            for descriptor in manifest.tags { defaults[descriptor.tag] = descriptor.preservationPriority }
            for (offset, pack) in manifest.packs.enumerated() {
                slots[offset].priority = pack.tags.map { priorityOverrides[$0] ?? defaults[$0] ?? 0 }.max() ?? 0
            }
        }

        // MARK: Kept descriptors

        /// The kept descriptor of local pack `index`, if any, marked most recently used.
        mutating func keptFile(_ index: Int) -> VerifiedFile? {
            slots[index].isLocal ? keptFiles.touch(index) : nil
        }

        /// Keeps `file` as local pack `index`'s descriptor unless it has one (then returns
        /// that one). Returns the file to read and the one that gave way (drop it unlocked).
        mutating func keep(_ file: VerifiedFile, for index: Int) -> (use: VerifiedFile, dropped: VerifiedFile?) {
            guard slots[index].isLocal else { return (file, nil) }
            return keptFiles.keep(file, for: index)
        }

        /// Forgets every kept descriptor (a retired revision's ledger); returns them. From then
        /// on a hold goes with the pack's last release.
        mutating func dropKeptFiles() -> [VerifiedFile] {
            holdsLinger = false
            dropIdleHolds()
            return keptFiles.dropAll()
        }
    }
}
