import Foundation
import ODRFSCore
import ODRFSFetch
import ODRFSStore

extension BundleUpdater {
    /// Step 2, fetch: every pack the plan fetches, assembled from local bytes plus ranges
    /// (see ``DeltaPackAssembler``) or, if that fails, downloaded whole; verified and
    /// published under its content hash beside the old revision's packs, which stay.
    /// Bounded by `--fetch-timeout` without progress (``UpdateProgressWatchdog``): then the
    /// update fails and the mount stays where it is.
    func fetch(_ candidate: Candidate) async throws(UpdateError) {
        let mounted = revisions.current.revision
        let watchdog = UpdateProgressWatchdog(limit: fetchDeadline, lowSpeedLimit: lowSpeedLimit)
        try await watchdog.bound(failure: { [origin] idle in
            UpdateError(.originUnreachable, "update to revision \(candidate.manifest.revision) gave up: no pack made progress for \(idle.components.seconds) s (--fetch-timeout) from \(origin.displayName); the mount stays on revision \(mounted)")
        }) { [self] () throws(UpdateError) in
            try await fetchPacks(of: candidate, watchdog: watchdog)
        }
    }

    private func fetchPacks(of candidate: Candidate, watchdog: UpdateProgressWatchdog) async throws(UpdateError) {
        let current = revisions.current
        let manager = current.manager
        let store = manager.store
        let wire = current.downloader.wire
        let downloader = MountedRevision.downloader(origin: origin, store: store, chunkSize: candidate.manifest.chunkSize,
                                                    wire: wire, logger: logger)
        var assembler = DeltaPackAssembler(origin: origin, store: store, io: manager.io, mounted: current.manifest,
                                           index: candidate.index, chunkSize: candidate.manifest.chunkSize, logger: logger)
        assembler.received = { bytes in watchdog.credit(Int64(bytes)) }
        for fetch in candidate.plan.fetches {
            let descriptor = candidate.manifest.pack(fetch.pack)
            if await manager.io.run({ store.contains(descriptor) }) { continue }
            do {
                let fetched = try await assembler.assemble(descriptor, plan: fetch.assembly)
                wire.add(fetched)
                watchdog.advance()
                logger.info("pack assembled for the update", metadata: [
                    "pack.id": "\(descriptor.id)", "pack.bytes": "\(descriptor.bytes.value)", "fetched.bytes": "\(fetched)",
                ])
                continue
            } catch where error.kind == .noSpace || error.kind == .cancelled {
                throw UpdateError(error, "cannot assemble pack '\(descriptor.id)' of revision \(candidate.manifest.revision)")
            } catch {
                logger.notice("assembling a pack from local bytes failed; downloading it whole", metadata: [
                    "pack.id": "\(descriptor.id)", "error": "\(error)",
                ])
            }
            do {
                try await downloader.fetch(descriptor, tally: watchdog.tally)
                watchdog.advance()
            } catch {
                throw UpdateError(error, "cannot fetch pack '\(descriptor.id)' of revision \(candidate.manifest.revision)")
            }
        }
    }
}
