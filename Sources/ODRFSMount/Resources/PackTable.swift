import Foundation
import Logging
import ODRFSControl
import ODRFSCore
import ODRFSStore
import Synchronization

/// Every pack's slot — local or not, its download in flight, retains, access times,
/// preservation priority — and the cache's byte accounting, under one lock.
///
/// The one owner of retains and bytes: the download coordinator, the purger and tag
/// requests change slots only through ``withState(_:)``, so "retained ⇒ never evicted"
/// and "local ⇒ counted" hold atomically. Under the lock: memory, plus the `rename(2)`
/// of an evicted pack into `trash/`. Never logging, SQLite, callbacks or file contents.
///
/// Invariants (checked on every unlock in debug builds): `retainCount >= 0`; a slot
/// with a download in flight is not local; `cachedBytes` is the sum of local slots',
/// their backing files' and orphans' bytes; `reservedBytes` the sum of in-flight downloads' bytes; `inUseBytes`
/// the sum of retained slots' bytes.
final class PackTable: Sendable {
    struct Slot {
        var isLocal = false
        var retainCount = 0
        var lastAccess: Date?
        /// Accesses not yet written to the cache index.
        var unsavedAccesses: Int64 = 0
        var download: DownloadCoordinator.Download?
        var fetchCount = 0
        var priority: Double = 0
        /// Passthrough backing files copied out of this pack: pack offset → bytes. Counted
        /// in `cachedBytes` while they exist; evicted with the pack.
        var backingFiles: [Int64: Int64] = [:]
        var backingBytes: Int64 { backingFiles.values.reduce(0, +) }
        /// The local pack's descriptor, shared by its readers (`PackTable+OpenFiles.swift`).
        var openFile: VerifiedFile?
    }

    struct State {
        var slots: [Slot]
        /// Verified packs of other bundle versions, by content hash: evicted first.
        var orphans: [String: CachedPack]
        var cachedBytes: Int64 = 0
        /// Pinned file indexes and manifests in the cache directory, as last measured on
        /// the I/O executor (`PackTable+Metadata.swift`): never evicted, not in `cachedBytes`,
        /// but counted against the budget (`budgetedBytes`).
        var metadataBytes: Int64 = 0
        var reservedBytes: Int64 = 0
        /// Bytes of packs with a retain count above zero.
        var inUseBytes: Int64 = 0
        var priorityOverrides: [Tag: Double]
        /// Tags whose override changed since it was last written to the cache index.
        var unsavedPriorities: Set<Tag> = []
        var evictionCount = 0
        /// Slots with an `openFile`, least recently opened first.
        var openFileOrder: [Int] = []
    }

    /// What a release did.
    enum ReleaseOutcome: Sendable {
        case released(nowUnretained: Bool)
        /// More releases than retains: ignored, so a count never goes negative.
        case underflow
    }

    let manifest: Manifest
    let limits: CacheLimits
    let clock: @Sendable () -> Date
    /// Where retains and releases are announced (its lock is a leaf, taken under ours).
    let events: MountEvents
    /// Where the table's owners count opens, bytes, errors and evictions.
    let metrics: MountMetrics
    private let state: Mutex<State>

    /// Starts from what the cache holds: `verified` by content hash (this version's packs
    /// become local slots, the rest orphans) and the persisted priority overrides.
    init(manifest: Manifest, limits: CacheLimits, clock: @escaping @Sendable () -> Date,
         verified: [String: CachedPack], priorityOverrides: [Tag: Double], events: MountEvents = MountEvents(), metrics: MountMetrics = MountMetrics()) {
        self.manifest = manifest
        self.events = events
        self.metrics = metrics
        self.limits = limits
        self.clock = clock
        var orphans = verified
        var slots: [Slot] = []
        for pack in manifest.packs {
            var slot = Slot()
            if let record = orphans.removeValue(forKey: pack.sha256.hex) {
                slot.isLocal = true
                slot.lastAccess = record.lastAccess
            }
            slots.append(slot)
        }
        var state = State(slots: slots, orphans: orphans, priorityOverrides: priorityOverrides)
        state.cachedBytes = verified.values.reduce(0) { $0 + $1.bytes }
        Self.assignPriorities(&state, manifest: manifest)
        self.state = Mutex(state)
    }

    /// Runs `body` under the lock; in debug builds, checks the invariants before the
    /// lock is released, so a bookkeeping bug fails the test that caused it.
    func withState<Value: Sendable>(_ body: (inout State) -> Value) -> Value {
        state.withLock { state in
            let value = body(&state)
            #if DEBUG
            checkInvariants(state)
            #endif
            return value
        }
    }

    /// Takes one retain and counts an access. Returns true when this retain carried the
    /// packs in use over `--max-in-use` (the caller logs it, outside the lock; opens are
    /// never refused for it).
    @discardableResult
    func retain(_ index: Int, in state: inout State, at now: Date) -> Bool {
        var crossed = false
        if state.slots[index].retainCount == 0 {
            let bytes = manifest.packs[index].bytes.value
            state.inUseBytes += bytes
            crossed = state.inUseBytes > limits.maximumInUse.value && state.inUseBytes - bytes <= limits.maximumInUse.value
            events.publish(MountEvent(.retained, manifest.packs[index], bytes: bytes))
        }
        state.slots[index].retainCount += 1
        state.slots[index].lastAccess = now.cacheIndexPrecision
        state.slots[index].unsavedAccesses += 1
        return crossed
    }

    /// Drops one retain of `pack`.
    func release(_ pack: PackNumber) -> ReleaseOutcome {
        withState { state in
            let index = Int(pack.rawValue)
            guard state.slots[index].retainCount > 0 else { return .underflow }
            state.slots[index].retainCount -= 1
            if state.slots[index].retainCount == 0 {
                state.inUseBytes -= manifest.packs[index].bytes.value
                events.publish(MountEvent(.released, manifest.packs[index], bytes: manifest.packs[index].bytes.value))
            }
            return .released(nowUnretained: state.slots[index].retainCount == 0)
        }
    }

    /// The cached copy of `pack` vanished: it is remote again. Returns whether it was local.
    func markMissing(_ pack: PackNumber) -> Bool {
        let bytes = manifest.pack(pack).bytes.value
        return withState { state in
            let index = Int(pack.rawValue)
            guard state.slots[index].download == nil && state.slots[index].isLocal else { return false }
            state.slots[index].isLocal = false
            Self.dropKeptFile(index, in: &state)
            state.cachedBytes -= bytes
            return true
        }
    }

    /// A pack's preservation priority is the highest of its tags' (override, else the
    /// manifest's default); base resources are never purged, so theirs is irrelevant.
    static func assignPriorities(_ state: inout State, manifest: Manifest) {
        var defaults: [Tag: Double] = [:]
        for descriptor in manifest.tags { defaults[descriptor.tag] = descriptor.preservationPriority }
        for (offset, pack) in manifest.packs.enumerated() {
            state.slots[offset].priority = pack.tags.map { tag in
                state.priorityOverrides[tag] ?? defaults[tag] ?? 0
            }.max() ?? 0
        }
    }

    #if DEBUG
    private func checkInvariants(_ state: State) {
        var cached: Int64 = 0
        var reserved: Int64 = 0
        var inUse: Int64 = 0
        for (index, slot) in state.slots.enumerated() {
            let bytes = manifest.packs[index].bytes.value
            precondition(slot.retainCount >= 0, "negative retain count for pack \(manifest.packs[index].id)")
            precondition(!(slot.isLocal && slot.download != nil), "pack \(manifest.packs[index].id) is local and downloading")
            if slot.isLocal { cached += bytes }
            cached += slot.backingBytes
            if slot.download != nil { reserved += bytes }
            if slot.retainCount > 0 { inUse += bytes }
            precondition(slot.openFile == nil || slot.isLocal, "pack \(manifest.packs[index].id) keeps a descriptor but is not local")
        }
        precondition(state.openFileOrder.count <= Self.maximumOpenPackFiles, "\(state.openFileOrder.count) kept pack descriptors")
        cached += state.orphans.values.reduce(0) { $0 + $1.bytes }
        precondition(cached == state.cachedBytes, "cachedBytes \(state.cachedBytes) but local packs and orphans add up to \(cached)")
        precondition(reserved == state.reservedBytes, "reservedBytes \(state.reservedBytes) but downloads add up to \(reserved)")
        precondition(inUse == state.inUseBytes, "inUseBytes \(state.inUseBytes) but retained packs add up to \(inUse)")
    }
    #endif
}
