import Foundation
import ODRFSCore
import ODRFSStore
import Synchronization

/// The one owner of pack state and the cache's byte accounting: every pack's slot —
/// local or not, its download's reservation, retains, access times, preservation
/// priority, backing files, kept descriptor — and the orphans of other bundle versions.
///
/// Its state (``State``) lives under a private lock and changes only through the intents
/// of this type and of `State` (reserve, settle a download, publish a verified copy,
/// retain, release, evict, attach a backing file, mark missing, priorities, metadata);
/// everyone else reads snapshots (``read(_:)``). So the invariants hold by construction
/// and are checked by ``State/violations()``: after every transaction in debug builds, and
/// in every build by `CacheLedgerPropertyTests` and `CacheLedgerStateTests`:
/// - a retained pack is local (or being downloaded) and never evicted;
/// - `cachedBytes` is the bytes of the files it says are on disk: local packs, their
///   backing files, orphans; `reservedBytes` those of the downloads in flight, which go
///   back to zero; `inUseBytes` those of retained packs; no pack is local and downloading.
///
/// What to evict is not decided here: ``QuotaPolicy`` chooses from a snapshot and the
/// ``Purger`` has the ledger carry its choice out. Under the lock: memory, plus the
/// `rename(2)` of an evicted pack into `trash/` or of a backing file into place. Never
/// logging, SQLite, callbacks or file contents.
final class CacheLedger: Sendable {
    /// What a release did.
    enum ReleaseOutcome: Sendable {
        case released(nowUnretained: Bool)
        /// More releases than retains: ignored, so a count never goes negative.
        case underflow
    }

    let manifest: Manifest
    let limits: CacheLimits
    let clock: @Sendable () -> Date
    /// Where retains, releases and evictions are announced (its lock is a leaf, taken under ours).
    let events: CacheEvents
    /// Where the ledger's users count opens, bytes, errors and evictions.
    let metrics: MountMetrics
    private let state: Mutex<State>

    /// Starts from what the cache holds: `verified` by content hash (this version's packs
    /// become local slots, the rest orphans) and the persisted priority overrides.
    init(manifest: Manifest, limits: CacheLimits, clock: @escaping @Sendable () -> Date,
         verified: [String: CachedPack], priorityOverrides: [Tag: Double], events: CacheEvents = CacheEvents(), metrics: MountMetrics = MountMetrics(),
         hold: @escaping @Sendable (String) -> PackHold? = { _ in nil }) {
        self.manifest = manifest
        self.events = events
        self.metrics = metrics
        self.limits = limits
        self.clock = clock
        state = Mutex(State(manifest: manifest, limits: limits, events: events, verified: verified, priorityOverrides: priorityOverrides, hold: hold))
    }

    /// Reads the state under the lock (no copy of it unless `body` makes one).
    func read<Value: Sendable>(_ body: (State) -> Value) -> Value {
        state.withLock { body($0) }
    }

    /// Several intents in one atomic step (the coordinator joins a waiter and retains, or
    /// settles a download and retains for its waiters). In debug builds the invariants
    /// are checked before the lock is released, so a bookkeeping bug fails its test.
    func transaction<Value: Sendable>(_ body: (inout State) -> Value) -> Value {
        state.withLock { state in
            let value = body(&state)
            #if DEBUG
            let violations = state.violations()
            precondition(violations.isEmpty, violations.joined(separator: "; "))
            #endif
            return value
        }
    }

    // MARK: Intents

    /// Retains every pack of `packs` if all are local; else retains none and returns false.
    func retainIfLocal(_ packs: [PackNumber]) -> Bool {
        let now = clock()
        return transaction { state in
            guard packs.allSatisfy({ state.slots[Int($0.rawValue)].isLocal }) else { return false }
            for pack in packs { state.retain(Int(pack.rawValue), at: now) }
            return true
        }
    }

    /// Drops one retain of `pack`.
    func release(_ pack: PackNumber) -> ReleaseOutcome {
        transaction { $0.release(Int(pack.rawValue)) }
    }

    /// The cached copy of `pack` vanished: it is remote again. Returns whether it was local.
    func markMissing(_ pack: PackNumber) -> Bool {
        let (wasLocal, dropped) = transaction { $0.markMissing(Int(pack.rawValue)) }
        _ = dropped  // closed here, outside the lock, if this was its last reference
        return wasLocal
    }

    /// A copy verified outside any download is in place; see ``State/publishVerifiedCopy(_:lastAccess:)``.
    func publishVerifiedCopy(_ pack: PackNumber) -> Bool {
        transaction { $0.publishVerifiedCopy(Int(pack.rawValue), lastAccess: nil) }
    }

    /// Gives `pack` the last access `date` if it has none.
    func noteAccess(_ pack: PackNumber, ifNoneSince date: Date?) {
        transaction { $0.noteAccess(Int(pack.rawValue), ifNoneSince: date) }
    }

    /// Gives each pack not used yet the last access of the same pack id in `times`.
    func adoptAccessTimes(_ times: [PackID: Date]) {
        transaction { state in
            for index in state.slots.indices { state.noteAccess(index, ifNoneSince: times[manifest.packs[index].id]) }
        }
    }

    /// See ``State/attachBackingFile(_:offset:bytes:place:)``.
    func attachBackingFile(_ pack: PackNumber, offset: Int64, bytes: Int64, place: () -> Bool) -> Bool {
        transaction { $0.attachBackingFile(Int(pack.rawValue), offset: offset, bytes: bytes, place: place) }
    }

    /// Chooses victims with `choose` (the quota policy, over the state as it is under the
    /// lock) and evicts them, `trash` moving their files aside. Returns the victims evicted.
    func evict(choosing choose: (State) -> [QuotaPolicy.Victim],
               trash: (_ sha256: String, _ backingOffsets: [Int64]) -> Bool) -> [QuotaPolicy.Victim] {
        transaction { state in
            choose(state).filter { state.evict($0, trash: trash) }
        }
    }

    /// Keeps `file` as local `pack`'s descriptor unless it has one; returns the one to read.
    func keep(_ file: VerifiedFile, for pack: PackNumber) -> VerifiedFile {
        let (use, dropped) = transaction { $0.keep(file, for: Int(pack.rawValue)) }
        _ = dropped  // closed here, outside the lock, if this was its last reference
        return use
    }

    /// Drops the store-wide holds of packs no longer retained (see ``State/holds``).
    func dropIdleHolds() {
        transaction { $0.dropIdleHolds() }
    }

    /// Forgets every kept descriptor (a retired revision's ledger).
    func dropKeptFiles() {
        let dropped = transaction { $0.dropKeptFiles() }
        _ = dropped
    }

    /// Records the pinned metadata measured on the I/O executor. Returns the previous figure.
    @discardableResult
    func setMetadata(_ metadata: CacheMetadata) -> Int64 {
        // Bounded far below Int64.max, so the budget sums (`CacheLimits.bytesToFree`) cannot
        // overflow whatever sparse file a filesystem reports under `index/`.
        let bytes = min(max(0, metadata.totalBytes), Self.metadataCeiling)
        return transaction { $0.setMetadataBytes(bytes) }
    }

    /// 1 EiB: more than any cache directory holds.
    static let metadataCeiling: Int64 = 1 << 60

    func setPriorityOverride(_ priority: Double?, for tag: Tag, markingUnsaved: Bool = true) {
        transaction { $0.setPriorityOverride(priority, for: tag, markingUnsaved: markingUnsaved) }
    }

    func markPriorityUnsaved(_ tag: Tag) {
        transaction { $0.markPriorityUnsaved(tag) }
    }

    func takeUnsavedPriorities() -> [(Tag, Double?)] {
        transaction { $0.takeUnsavedPriorities() }
    }

    func takeUnsavedAccesses() -> [(sha256: String, lastAccess: Date, count: Int64)] {
        transaction { $0.takeUnsavedAccesses() }
    }
}
