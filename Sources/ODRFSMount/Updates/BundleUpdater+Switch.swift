import Foundation
import FUSEKit
import ODRFSControl
import ODRFSCore
import ODRFSFetch
import ODRFSStore

extension BundleUpdater {
    /// `odrfs update MNT`: checks, fetches what the new revision needs, then switches.
    ///
    /// Order, so that a crash or kill -9 at any point leaves a whole revision: (1) the
    /// changed packs this mount keeps local are fetched, verified and published under
    /// their content hashes (the old revision's packs stay); (2) with trusted keys, the
    /// new revision is recorded as seen; (3) the cache's `manifest.json` is replaced by one
    /// atomic rename — a restart before it mounts the old revision, after it the new one;
    /// (4) the new revision's resource manager (reconciled with the cache) and file system
    /// are built aside; (5) one pointer swap serves them; (6) the kernel forgets the entries
    /// that changed. Handles opened before keep their readers, retains and bytes.
    func update() async throws(ControlError) -> UpdateReport {
        let claimed = busy.withLock { busy in
            if busy { return false }
            busy = true
            return true
        }
        guard claimed else { throw ControlError(.badRequest, "an update of this mount is already in progress") }
        defer { busy.withLock { $0 = false } }
        // An index written after this moment comes from a check running beside the update.
        let began = Date()
        let (report, candidate) = try await check()
        guard let candidate else { return report }
        guard candidate.manifest.revision > report.mountedRevision else {
            throw ControlError(.rollbackRefused, "the origin's manifest differs from the mounted one but has the same revision \(report.mountedRevision); refusing a revision that is not newer")
        }
        let started = ContinuousClock.now
        let watchdog = UpdateProgressWatchdog(limit: fetchDeadline, lowSpeedLimit: lowSpeedLimit)
        try await watchdog.bound(failure: { [origin] idle in
            ControlError(.originUnreachable, "update to revision \(candidate.manifest.revision) gave up: no pack made progress for \(idle.components.seconds) s (--fetch-timeout) from \(origin.displayName); the mount stays on revision \(report.mountedRevision)")
        }) { [self] () throws(ControlError) in
            try await fetchPacks(of: candidate, watchdog: watchdog)
        }
        try await publishManifest(candidate)
        let switched = try await switchRevision(to: candidate, updateBegan: began)
        logger.info("bundle updated", metadata: [
            "revision": "\(report.mountedRevision)", "new.revision": "\(candidate.manifest.revision)",
            "download.bytes": "\(report.downloadBytes)", "reused.bytes": "\(report.reusedBytes)",
            "kept.files": "\(switched.keptFiles)", "refused.digests": "\(switched.refusedDigests)",
            "stale.entries": "\(switched.staleEntries.count)",
            "duration": "\(ContinuousClock.now - started)",
        ])
        var done = report
        done.switched = true
        return done
    }

    /// (1) Every pack the plan fetches, assembled from local bytes plus ranges (see
    /// ``DeltaPackAssembler``), or downloaded whole if that fails; verified and published.
    private func fetchPacks(of candidate: Candidate, watchdog: UpdateProgressWatchdog) async throws(ControlError) {
        let manager = revisions.current
        let store = manager.store
        let downloader = PackDownloader(origin: origin, store: store, chunkSize: candidate.manifest.chunkSize,
                                        wire: manager.downloader.wire, logger: logger)
        var assembler = DeltaPackAssembler(origin: origin, store: store, io: manager.io, mounted: manager.manifest,
                                           index: candidate.index, chunkSize: candidate.manifest.chunkSize, logger: logger)
        assembler.received = { bytes in watchdog.credit(Int64(bytes)) }
        for fetch in candidate.plan.fetches {
            let descriptor = candidate.manifest.pack(fetch.pack)
            if await manager.io.run({ store.contains(descriptor) }) { continue }
            do {
                let fetched = try await assembler.assemble(descriptor, plan: fetch.assembly)
                manager.downloader.wire.add(fetched)
                watchdog.advance()
                logger.info("pack assembled for the update", metadata: [
                    "pack.id": "\(descriptor.id)", "pack.bytes": "\(descriptor.bytes.value)", "fetched.bytes": "\(fetched)",
                ])
                continue
            } catch where error.kind == .noSpace || error.kind == .cancelled {
                throw Self.controlError(error, "cannot assemble pack '\(descriptor.id)' of revision \(candidate.manifest.revision)")
            } catch {
                logger.notice("assembling a pack from local bytes failed; downloading it whole", metadata: [
                    "pack.id": "\(descriptor.id)", "error": "\(error)",
                ])
            }
            do {
                try await downloader.fetch(descriptor, tally: watchdog.tally)
                watchdog.advance()
            } catch {
                throw Self.controlError(error, "cannot fetch pack '\(descriptor.id)' of revision \(candidate.manifest.revision)")
            }
        }
    }

    /// (2) and (3): the revision recorded as seen (trusted keys), then the cache's manifest.
    private func publishManifest(_ candidate: Candidate) async throws(ControlError) {
        let manager = revisions.current
        let store = manager.store
        let revision = candidate.manifest.revision
        if !trustedKeys.isEmpty, let signature = candidate.signature,
           let signer = (try? ManifestSignature(fileContents: signature))?.keyID {
            do {
                try await manager.io.run { () throws(StoreError) in try store.index.recordRevision(revision, key: signer, at: Date()) }
            } catch {
                throw ControlError(.internalError, "cannot record revision \(revision) in the cache index: \(error)")
            }
        }
        do {
            try await manager.io.run { () throws(StoreError) in try store.saveManifest(candidate.data, signature: candidate.signature) }
        } catch {
            throw ControlError(.internalError, "cannot write the new manifest to the cache: \(error)")
        }
    }

    /// (4) to (6).
    private func switchRevision(to candidate: Candidate, updateBegan: Date) async throws(ControlError) -> RevisionTransition {
        let previous = fileSystem.served
        let old = previous.manager
        let io = old.io
        let downloader = PackDownloader(origin: origin, store: old.store, chunkSize: candidate.manifest.chunkSize,
                                        wire: old.downloader.wire, logger: logger)
        let (limits, downloads, logger) = (old.limits, maximumConcurrentDownloads, self.logger)
        let manifest = candidate.manifest
        let manager: ResourceManager
        do {
            manager = try await io.run { () throws(StoreError) in
                // Access times and priorities of the old revision first: the new manager reads them.
                old.saveAccesses()
                old.savePriorities()
                return try ResourceManager(manifest: manifest, store: old.store, downloader: downloader, limits: limits,
                                           maximumConcurrentDownloads: downloads, logger: logger, io: io,
                                           schedule: old.schedule, events: old.events)
            }
        } catch {
            throw ControlError(.internalError, "cannot read the cache index for revision \(manifest.revision): \(error)")
        }
        manager.adoptAccessTimes(from: old)
        let check = old.updateCheck.current
        if let available = check.availableRevision, let date = check.lastCheck {
            manager.updateCheck.record(availableRevision: available, at: date)
        }
        let (oldIndex, oldInodes, oldManifest, newIndex, store) = (previous.index, previous.inodes, old.manifest, candidate.index, old.store)
        // Reads the packs of files whose digests claim they are unchanged: on the I/O executor.
        let started = ContinuousClock.now
        let (transition, comparedBytes, mismatches) = await io.run {
            let bytes = VerifiedFileBytes(store: store, mounted: oldManifest, available: manifest)
            let transition = RevisionTransition.make(from: oldIndex, oldInodes, oldManifest, to: newIndex, manifest,
                                                     sameBytes: bytes.same)
            return (transition, bytes.comparedBytes, bytes.mismatches)
        }
        if mismatches > 0 {
            // One index's SHA-256 is wrong (a broken or hostile build): worth an operator's eye.
            logger.notice("files with the same SHA-256 in both file indexes have different bytes; they become new files", metadata: [
                "files": "\(mismatches)", "new.revision": "\(manifest.revision)", "index": "\(manifest.index.file)",
            ])
        }
        logger.debug("update: compared the bytes of files whose digests say they are unchanged", metadata: [
            "compared.bytes": "\(comparedBytes)", "refused.digests": "\(transition.refusedDigests)",
            "duration": "\(ContinuousClock.now - started)",
        ])
        let next = BundleFileSystem(index: candidate.index, manager: manager, logger: logger,
                                    inodes: transition.inodes, previous: previous)
        revisions.retire(old)
        fileSystem.switchTo(next)
        revisions.carryOverHeldRequests(to: manager)
        await io.run {
            old.retire()
            // Only this revision and the one it replaced keep their file indexes on disk.
            manager.releaseDroppedIndexes(keepingPrevious: oldManifest.index, updateBegan: updateBegan)
        }
        // Wake the new purger: packs only the old revision named are purged first.
        manager.purger.wake(.periodicCheck)
        // Writes to /dev/fuse that may wait for a directory lock: on the I/O executor.
        await io.run { self.invalidate(transition) }
        return transition
    }

    /// (6) Off every FUSE thread: the kernel takes directory locks for these.
    private func invalidate(_ transition: RevisionTransition) {
        guard let kernel else { return }
        for (parent, name) in transition.staleEntries {
            let result = kernel.invalidateEntry(parent: parent, name: name)
            if result != 0 && result != -ENOENT {
                logger.debug("kernel entry invalidation failed", metadata: ["name": "\(name)", "errno": "\(-result)"])
            }
        }
        for directory in transition.staleDirectories {
            kernel.invalidateInode(directory)
        }
    }
}
