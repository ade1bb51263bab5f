import Foundation
import FUSEKit
import ODRFSControl
import ODRFSCore
import ODRFSFetch
import ODRFSStore

extension BundleUpdater {
    /// `odrfs update MNT`: plan, fetch, switch (see ``BundleUpdater``).
    ///
    /// Order, so that a crash or kill -9 at any point leaves a whole revision: (1) the
    /// changed packs this mount keeps local are fetched, verified and published under
    /// their content hashes (the old revision's packs stay); (2) with trusted keys, the
    /// new revision is recorded as seen; (3) the cache's `manifest.json` is replaced by one
    /// atomic rename — a restart before it mounts the old revision, after it the new one;
    /// (4) the new revision (``MountedRevision``: its manager reconciled with the cache, its
    /// view) is built aside; (5) one pointer swap serves it; (6) the kernel forgets the
    /// entries that changed. Handles opened before keep their readers, retains and bytes.
    func update() async throws(UpdateError) -> UpdateReport {
        try await exclusively { () throws(UpdateError) in try await updateNow() }
    }

    /// Runs `body` unless an update or a variant switch of this mount is running: a second
    /// one is refused, not queued.
    func exclusively<T: Sendable>(_ body: () async throws(UpdateError) -> T) async throws(UpdateError) -> T {
        let claimed = busy.withLock { busy in
            if busy { return false }
            busy = true
            return true
        }
        guard claimed else { throw UpdateError(.busy, "an update or variant switch of this mount is already in progress") }
        defer { busy.withLock { $0 = false } }
        return try await body()
    }

    private func updateNow() async throws(UpdateError) -> UpdateReport {
        // An index written after this moment comes from a check running beside the update.
        let began = Date()
        let (report, candidate) = try await plan()
        guard let candidate else { return report }
        guard candidate.manifest.revision > report.mountedRevision else {
            throw UpdateError(.rollbackRefused, "the origin's manifest differs from the mounted one but has the same revision \(report.mountedRevision); refusing a revision that is not newer")
        }
        let started = ContinuousClock.now
        try await fetch(candidate)
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

    /// Step 3, switch, once every pack the candidate needs is local: the cache's manifest
    /// replaced (the restart point), the new revision built by the one factory
    /// (``MountedRevision/make(published:view:variants:store:origin:wire:settings:succeeding:)``)
    /// and served, the old one retired, the kernel told what changed.
    func switchRevision(to candidate: Candidate, updateBegan: Date) async throws(UpdateError) -> RevisionTransition {
        try await publishManifest(candidate)
        let previous = revisions.current
        let old = previous.manager
        let io = old.io
        let (oldIndex, oldInodes, oldManifest) = (previous.index, previous.fileSystem.inodes, previous.manifest)
        let (manifest, newIndex, store) = (candidate.manifest, candidate.index, old.store)
        let (published, view, variants) = (candidate.published, candidate.view, candidate.variants)
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
        let next: MountedRevision
        do {
            next = try await MountedRevision.make(
                published: published, view: view, variants: variants, store: store, origin: origin,
                wire: previous.downloader.wire, settings: settings, succeeding: .init(previous: previous, inodes: transition.inodes))
        } catch {
            throw UpdateError(.internalError, "cannot read the cache index for revision \(manifest.revision): \(error)")
        }
        revisions.switchTo(next)
        let manager = next.manager
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

    /// The restart point: with trusted keys the revision recorded as seen, then the cache's
    /// manifest replaced by one atomic rename.
    private func publishManifest(_ candidate: Candidate) async throws(UpdateError) {
        guard let data = candidate.data else { return }
        let manager = revisions.current.manager
        let store = manager.store
        let revision = candidate.manifest.revision
        if !trustedKeys.isEmpty, let signature = candidate.signature,
           let signer = (try? ManifestSignature(fileContents: signature))?.keyID {
            do {
                try await manager.io.run { () throws(StoreError) in try store.bundleIndex.recordRevision(revision, key: signer, at: Date()) }
            } catch {
                throw UpdateError(.internalError, "cannot record revision \(revision) in the cache index: \(error)")
            }
        }
        do {
            try await manager.io.run { () throws(StoreError) in try store.saveManifest(data, signature: candidate.signature) }
        } catch {
            throw UpdateError(.internalError, "cannot write the new manifest to the cache: \(error)")
        }
    }

    /// Off every FUSE thread: the kernel takes directory locks for these.
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
