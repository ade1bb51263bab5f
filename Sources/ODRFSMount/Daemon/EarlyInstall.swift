import Foundation
import Logging
import ODRFSCore
import ODRFSFetch
import ODRFSRuntime
import ODRFSStore

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
    /// cancel it if the mount fails.
    static func start(manifest: Manifest, store: PackStore, downloader: PackDownloader, logger: Logger) -> Task<Void, Never>? {
        guard manifest.variantDeclarations.isEmpty else { return nil }
        let base = manifest.basePacks
        let numbers = base + TagPackIndex(manifest).packs(for: manifest.initialInstall).filter { !base.contains($0) }
        let packs = numbers.map { manifest.pack($0) }
        guard !packs.isEmpty else { return nil }
        return Task {
            await withTaskGroup(of: Void.self) { group in
                var next = 0
                func addNext() {
                    guard next < packs.count else { return }
                    let pack = packs[next]
                    next += 1
                    group.addTask { await fetch(pack, store: store, downloader: downloader, logger: logger) }
                }
                for _ in 0..<concurrency { addNext() }
                for await _ in group { addNext() }
            }
        }
    }

    private static func fetch(_ pack: PackDescriptor, store: PackStore, downloader: PackDownloader, logger: Logger) async {
        let claim = await IOExecutor.cache.run { () -> PackStore.DownloadClaimOutcome? in
            guard !store.contains(pack), !store.hasVerifiedCopy(of: pack) else { return nil }
            return store.claimDownload(sha256: pack.sha256.hex)
        }
        let owned: DownloadClaim?
        switch claim {
        case nil, .busy: return
        case .claimed(let held): owned = held
        case .unclaimed: owned = nil
        }
        do {
            try await downloader.fetch(pack) { _ in owned?.touch() }
        } catch {
            logger.debug("early fetch failed; the initial install fetches it again", metadata: ["pack.id": "\(pack.id)", "error": "\(error)"])
        }
        // An unlink and a close: on the I/O executor, not here on the cooperative pool.
        await IOExecutor.cache.run { owned?.release() }
    }
}
