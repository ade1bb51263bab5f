import Foundation
import Logging
import ODRFSCore
import ODRFSFetch
import ODRFSRuntime
import ODRFSStore
import Synchronization

/// A cold mount in two round trips (issue 27, item 5): the base and initial-install packs
/// are named by the manifest, so they are fetched while the file index is, not after it.
/// Before, a cold mount asked for the manifest, then the index, then the packs, one after
/// another. The packs go through the mount's pipeline (verified chunk by chunk against the
/// manifest, published into the cache) before any resource manager exists; the manager then
/// finds them local, and ``InitialInstall`` only checks what is left.
///
/// Best effort: a pack that fails here (the origin hiccups, the cache is full) is fetched
/// again by ``InitialInstall``, which reports what fails there. In a store a pack another
/// mount is downloading (its claim is taken) is left to that mount and to the manager's
/// wait. A manifest with variants is left to ``InitialInstall``: which base packs apply
/// depends on the index's variant directories. At most ``concurrency`` downloads at once.
enum EarlyInstall {
    static let concurrency = 4

    /// Starts fetching; await the task's value before the resource manager is made, and
    /// cancel it if the mount fails. `progress` gets (bytes local, bytes total) of these
    /// packs as they arrive, for the waiting `odrfs mount`'s bar (an initial install of
    /// gigabytes happens here now).
    /// A pack this fetched from the origin, and the bytes the origin sent for it.
    struct Fetched: Sendable {
        var pack: PackID
        var wireBytes: Int64
    }

    static func start(manifest: Manifest, tagPacks: TagPackIndex, store: PackStore, downloader: PackDownloader, logger: Logger,
                      progress: @escaping @Sendable (Int64, Int64) -> Void) -> Task<[Fetched], Never>? {
        guard manifest.variantDeclarations.isEmpty else { return nil }
        let base = manifest.basePacks
        let numbers = base + tagPacks.packs(for: manifest.initialInstall).filter { !base.contains($0) }
        let packs = numbers.map { manifest.pack($0) }
        guard !packs.isEmpty else { return nil }
        let tally = Tally(packs: packs, report: progress)
        return Task {
            await withTaskGroup(of: Fetched?.self) { group in
                var next = 0
                func addNext() {
                    guard next < packs.count else { return }
                    let (position, pack) = (next, packs[next])
                    next += 1
                    group.addTask {
                        await fetch(pack, store: store, downloader: downloader, logger: logger) { tally.set(position, to: $0) }
                    }
                }
                for _ in 0..<concurrency { addNext() }
                var fetched: [Fetched] = []
                for await result in group {
                    if let result { fetched.append(result) }
                    addNext()
                }
                return fetched
            }
        }
    }

    /// Each pack's bytes local so far, summed for the progress bar.
    private final class Tally: Sendable {
        private let bytes: Mutex<[Int64]>
        private let total: Int64
        private let report: @Sendable (Int64, Int64) -> Void

        init(packs: [PackDescriptor], report: @escaping @Sendable (Int64, Int64) -> Void) {
            bytes = Mutex(Array(repeating: 0, count: packs.count))
            total = packs.reduce(into: Int64(0)) { $0 = $0.addingReportingOverflow($1.bytes.value).partialValue }
            self.report = report
        }

        func set(_ position: Int, to value: Int64) {
            let done = bytes.withLock { bytes in
                bytes[position] = value
                return bytes.reduce(into: Int64(0)) { $0 = $0.addingReportingOverflow($1).partialValue }
            }
            report(min(done, total), total)
        }
    }

    /// Returns what it fetched from the origin, if it did.
    private static func fetch(_ pack: PackDescriptor, store: PackStore, downloader: PackDownloader, logger: Logger,
                              local: @escaping @Sendable (Int64) -> Void) async -> Fetched? {
        let claim = await IOExecutor.cache.run { () -> PackStore.DownloadClaimOutcome? in
            guard !store.contains(pack), !store.hasVerifiedCopy(of: pack) else { return nil }
            return store.claimDownload(sha256: pack.sha256.hex)
        }
        let owned: DownloadClaim?
        switch claim {
        case nil:
            local(pack.bytes.value)
            return nil
        case .busy: return nil
        case .claimed(let held): owned = held
        case .unclaimed: owned = nil
        }
        let wire = DownloadWireTally()
        var fetched: Fetched?
        do {
            try await downloader.fetch(pack, tally: wire) { progress in
                owned?.touch()
                local(progress.received.value)
            }
            local(pack.bytes.value)
            fetched = Fetched(pack: pack.id, wireBytes: wire.takeUnreported())
        } catch {
            logger.debug("early fetch failed; the initial install fetches it again", metadata: ["pack.id": "\(pack.id)", "error": "\(error)"])
        }
        // An unlink and a close: on the I/O executor, not here on the cooperative pool.
        await IOExecutor.cache.run { owned?.release() }
        return fetched
    }
}

extension ResourceManager {
    /// Counts the packs a cold mount fetched before this manager existed as fetches of it
    /// (its status's fetch counts, `odrfs_fetched_bytes_total{cause="open"}`, as the initial
    /// install counts its own).
    func countEarlyFetches(_ fetched: [EarlyInstall.Fetched]) {
        for item in fetched {
            guard let pack = manifest.packNumber(of: item.pack) else { continue }
            table.transaction { state in state.countEarlyFetch(Int(pack.rawValue)) }
            if item.wireBytes > 0 { table.metrics.recordFetched(item.wireBytes, cause: .open) }
        }
    }
}
