import Foundation
import Logging
import ODRFSCore
import ODRFSFetch
import ODRFSStore
import Synchronization

/// Owns every pack's state: local or not, downloads in flight, retains and access times.
///
/// - Single-flight: however many callers want a pack, one download runs; callers wait
///   as *waiters* on it. A waiter that is cancelled (a FUSE interrupt) leaves alone;
///   the download goes on for the others.
/// - Retains are taken under the same lock that publishes a finished download, so a
///   pack is never observed local-but-unretained by a waiter that asked for a retain.
/// - Nothing here blocks: the lock guards plain bookkeeping only, downloads run in tasks.
///
/// Invariants (checked under the lock): `retainCount >= 0`; a slot with a download in
/// flight is not local; waiters exist only while a download is in flight.
public final class ResourceManager: Sendable {
    public let manifest: Manifest
    let store: PackStore
    let downloader: PackDownloader
    let logger: Logger
    let clock: @Sendable () -> Date
    let state: Mutex<State>

    struct Waiter {
        var continuation: CheckedContinuation<Void, any Error>
        var retains: Bool
    }

    struct Download {
        var waiters: [UInt64: Waiter] = [:]
        var bytesDone: Int64 = 0
    }

    struct Slot {
        var isLocal = false
        var retainCount = 0
        var lastAccess: Date?
        var download: Download?
        var fetchCount = 0
    }

    struct State {
        var slots: [Slot]
        var nextWaiterID: UInt64 = 0
    }

    public init(
        manifest: Manifest,
        store: PackStore,
        downloader: PackDownloader,
        logger: Logger,
        clock: @escaping @Sendable () -> Date = Date.init
    ) {
        self.manifest = manifest
        self.store = store
        self.downloader = downloader
        self.logger = logger
        self.clock = clock
        let slots = manifest.packs.map { Slot(isLocal: store.contains($0)) }
        self.state = Mutex(State(slots: slots))
    }

    // MARK: Access

    /// The fast path of open(): if `pack` is local, retain it, count an access and
    /// return true; otherwise change nothing and return false.
    public func retainIfLocal(_ pack: PackNumber) -> Bool {
        let now = clock()
        return state.withLock { state in
            let index = Int(pack.rawValue)
            guard state.slots[index].isLocal else { return false }
            state.slots[index].retainCount += 1
            state.slots[index].lastAccess = now
            return true
        }
    }

    /// Makes `pack` local (downloading it once, however many callers wait) and
    /// retains it. Throws `FetchError` on failure and `.cancelled` if the calling
    /// task is cancelled first; the download itself carries on for other waiters.
    public func retain(_ pack: PackNumber) async throws(FetchError) {
        try await acquire(pack, retains: true)
    }

    /// Makes `pack` local without retaining it (initial install, prefetch).
    public func makeLocal(_ pack: PackNumber) async throws(FetchError) {
        try await acquire(pack, retains: false)
    }

    /// Drops one retain of `pack`. An unbalanced release is logged and ignored,
    /// so a count can never go negative.
    public func release(_ pack: PackNumber) {
        let underflow = state.withLock { state -> Bool in
            let index = Int(pack.rawValue)
            guard state.slots[index].retainCount > 0 else { return true }
            state.slots[index].retainCount -= 1
            return false
        }
        if underflow {
            logger.error("release without retain ignored", metadata: ["pack.id": "\(manifest.pack(pack).id)"])
        }
    }

    /// Records that the cached copy of `pack` vanished (e.g. deleted by hand), so the
    /// next open downloads it again instead of failing forever.
    public func markMissing(_ pack: PackNumber) {
        state.withLock { state in
            let index = Int(pack.rawValue)
            if state.slots[index].download == nil { state.slots[index].isLocal = false }
        }
        logger.warning("cached pack missing; it will be downloaded again", metadata: ["pack.id": "\(manifest.pack(pack).id)"])
    }

    /// Where the verified copy of `pack` lives in the cache.
    public func path(of pack: PackNumber) -> String {
        store.path(of: manifest.pack(pack))
    }

    // MARK: Status

    public func state(of pack: PackNumber) -> PackState {
        state.withLock { Self.packState($0.slots[Int(pack.rawValue)]) }
    }

    /// A consistent snapshot of every pack, in manifest order.
    public func status() -> [PackStatus] {
        let slots = state.withLock { $0.slots }
        return zip(manifest.packs, slots).enumerated().map { offset, element in
            let (pack, slot) = element
            return PackStatus(
                number: PackNumber(UInt32(offset)), id: pack.id, tags: pack.tags, bytes: pack.bytes,
                state: Self.packState(slot), bytesDownloaded: ByteCount(slot.download?.bytesDone ?? 0),
                retainCount: slot.retainCount, lastAccess: slot.lastAccess, fetchCount: slot.fetchCount
            )
        }
    }

    private static func packState(_ slot: Slot) -> PackState {
        if slot.download != nil { return .downloading }
        if !slot.isLocal { return .notDownloaded }
        return slot.retainCount > 0 ? .inUse : .downloaded
    }
}
