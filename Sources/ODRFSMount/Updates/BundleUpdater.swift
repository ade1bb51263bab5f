import Foundation
import Logging
import ODRFSControl
import ODRFSCore
import ODRFSFetch
import ODRFSRuntime
import ODRFSStore
import FUSEKit
import Synchronization

/// `odrfs update`: moves a mount to the origin's newer revision in three steps.
///
/// 1. **Plan** (``plan(prefetched:)``, this file): read the origin's manifest (and, with
///    `--trust-key`, its signature) and the new file index — small and content-addressed —
///    into the cache, and say what the move costs (``UpdatePlan``). Never fetches a pack.
///    A manifest older than the mounted one is refused as a rollback, as is (with trusted
///    keys) one that is unsigned or older than a revision already seen. `odrfs update
///    --check` and the periodic check stop here.
/// 2. **Fetch** (``fetch(_:)``, `BundleUpdater+Fetch.swift`): the changed packs this mount
///    keeps local, assembled or downloaded, verified and published beside the old ones.
/// 3. **Switch** (``switchRevision(to:updateBegan:)``, `BundleUpdater+Switch.swift`):
///    the cache's manifest replaced, the new ``MountedRevision`` built and served.
///
/// One update runs at a time. Failures are ``UpdateError``s; the control service maps them.
final class BundleUpdater: Sendable {
    /// A newer revision (or, for `odrfs variant`, another view of the mounted one),
    /// checked and planned: what steps 2 and 3 work from.
    struct Candidate: Sendable {
        /// The manifest's bytes and signature to publish into the cache; nil for a
        /// variant switch, which keeps the cache's manifest.
        let data: Data?
        let signature: Data?
        let published: PublishedRevision
        /// What the mount will serve: `published` resolved with ``variants``.
        let view: VariantView
        let variants: VariantRequest
        let plan: UpdatePlan
        /// The served manifest.
        var manifest: Manifest { view.manifest }
        /// The served index.
        var index: FileIndex { view.index }
    }

    let origin: any Origin
    let revisions: MountRevisions
    /// Tells the kernel what to forget after a switch; nil in tests without a mount.
    let kernel: FUSESession?
    let trustedKeys: [TrustKey]
    let manifestLimit: ByteCount
    /// What every revision of the mount is built with (``MountedRevision/make(published:view:variants:store:origin:wire:settings:succeeding:)``).
    let settings: MountedRevision.Settings
    /// `--fetch-timeout`: the longest the fetch phase of an update may go without progress.
    let fetchDeadline: Duration
    /// `--low-speed-limit`: slower than this, bytes are no progress for that bound.
    let lowSpeedLimit: ByteCount
    let logger: Logger
    /// Set while an update runs: a second one is refused rather than queued.
    let busy = Mutex(false)
    /// The manifest's ETag at the last periodic check, for the next conditional GET.
    let manifestETag = Mutex<String?>(nil)

    init(origin: any Origin, revisions: MountRevisions, kernel: FUSESession?, configuration: MountConfiguration,
         logger: Logger) {
        self.origin = origin
        self.revisions = revisions
        self.kernel = kernel
        self.trustedKeys = configuration.trustedKeys
        self.manifestLimit = configuration.manifestLimit
        self.settings = MountedRevision.Settings(configuration, logger: logger)
        self.fetchDeadline = configuration.originOptions.fetchDeadline
        self.lowSpeedLimit = configuration.originOptions.lowSpeedLimit
        self.logger = logger
    }

    /// `odrfs update --check`: the plan's report, nothing fetched.
    func check() async throws(UpdateError) -> UpdateReport {
        try await plan().report
    }

    /// Step 1, plan: fetches and checks the origin's manifest and, if it is another bundle,
    /// its file index, and plans the move from the revision served now. The candidate is
    /// nil when the origin serves the mounted bundle. `prefetched`: the manifest's bytes
    /// when the caller already has them. The new revision is resolved with the mount's
    /// variant request before planning, so the plan (and the origin) sees only the
    /// selected variants' packs.
    func plan(prefetched: Data? = nil) async throws(UpdateError) -> (report: UpdateReport, candidate: Candidate?) {
        let current = revisions.current
        let (manager, index, mounted) = (current.manager, current.index, current.manifest)
        let (data, signature, available) = try await fetchManifest(prefetched: prefetched)
        manager.updateCheck.record(availableRevision: available.revision, at: Date())
        guard available.revision >= mounted.revision else {
            throw UpdateError(.rollbackRefused, "refusing revision \(available.revision) from \(origin.displayName): the mount serves revision \(mounted.revision), and updates never go back")
        }
        guard available.bundleVersion != mounted.bundleVersion else {
            return (UpdateReport(mountedRevision: mounted.revision, availableRevision: available.revision,
                                 changedPacks: [], downloadBytes: 0, reusedBytes: 0), nil)
        }
        let published = PublishedRevision(manifest: available, index: try await loadIndex(of: available, into: current))
        let variants = current.variants
        let view: VariantView
        do {
            view = try await manager.io.run { () throws(FileIndexError) in
                let view = try variants.view(of: published)
                if !available.variantDeclarations.isEmpty { published.index.releaseResidentPages() }
                return view
            }
        } catch {
            throw UpdateError(.resourceUnavailable, "the new revision's file index \(available.index.file) has unusable variant directories: \(error)")
        }
        let local = manager.localOrRetainedPacks()
        let held = revisions.held.tags
        // Walks both memory-mapped indexes (page faults are disk reads): on the I/O executor.
        let store = manager.store
        let plan = await manager.io.run {
            UpdatePlan.make(mounted: mounted, mountedIndex: index, local: local, available: view.manifest,
                            availableIndex: view.index, heldTags: held,
                            otherBundles: { store.otherBundles() }, present: { store.contains($0) })
        }
        let report = UpdateReport(mountedRevision: mounted.revision, availableRevision: available.revision,
                                  changedPacks: plan.changedPacks.map { view.manifest.pack($0).id.rawValue },
                                  downloadBytes: plan.downloadBytes, reusedBytes: plan.reusedBytes)
        logger.info("update check", metadata: [
            "revision": "\(mounted.revision)", "available.revision": "\(available.revision)",
            "changed.packs": "\(plan.changedPacks.count)", "download.bytes": "\(plan.downloadBytes)",
            "reused.bytes": "\(plan.reusedBytes)",
        ])
        return (report, Candidate(data: data, signature: signature, published: published, view: view, variants: variants, plan: plan))
    }

    /// A check from the interval timer (`--update-interval`): a conditional GET with the
    /// ETag of the last one, so nothing but a 304 travels while the manifest is unchanged;
    /// nil then. Origins without ETags (a local dist dir) are simply read again
    /// (``Origin/conditionalData(at:limit:etag:)``; a ``MirrorSet`` asks its healthiest server).
    func periodicCheck() async throws(UpdateError) -> UpdateReport? {
        let etag = manifestETag.withLock { $0 }
        let answer: ConditionalFetch
        do {
            answer = try await origin.conditionalData(at: Manifest.fileName, limit: manifestLimit, etag: etag)
        } catch {
            throw UpdateError(error, "cannot check \(origin.displayName) for updates")
        }
        let prefetched: Data
        switch answer {
        case .notModified:
            revisions.current.manager.updateCheck.touch(at: Date())
            return nil
        case .modified(let data, let etag):
            manifestETag.withLock { $0 = etag }
            prefetched = data
        }
        return try await plan(prefetched: prefetched).report
    }

    private func fetchManifest(prefetched: Data?) async throws(UpdateError) -> (Data, Data?, Manifest) {
        let data: Data
        var signature: Data?
        do {
            if let prefetched {
                data = prefetched
            } else {
                data = try await origin.data(at: Manifest.fileName, limit: manifestLimit)
            }
            if !trustedKeys.isEmpty {
                do {
                    signature = try await origin.data(at: ManifestSignature.fileName, limit: BundleLoader.signatureLimit)
                } catch where error.kind == .notFound {
                    signature = nil
                }
            }
        } catch {
            throw UpdateError(error, "cannot read the manifest from \(origin.displayName)")
        }
        if trustedKeys.isEmpty {
            do {
                return (data, nil, try Manifest.decode(data))
            } catch {
                throw UpdateError(.resourceUnavailable, "the manifest from \(origin.displayName) is invalid: \(error)")
            }
        }
        let manager = revisions.current.manager
        let store = manager.store
        let seen: [KeyID: SeenRevision]
        do {
            seen = try await manager.io.run { () throws(StoreError) in try store.bundleIndex.seenRevisions() }
        } catch {
            throw UpdateError(.internalError, "cannot read the revisions seen from the cache index: \(error)")
        }
        do {
            let verified = try ManifestTrust(trustedKeys: trustedKeys).verify(manifest: data, signature: signature, now: Date(), seen: seen)
            return (data, signature, verified.manifest)
        } catch where error.kind == .rollback {
            throw UpdateError(.rollbackRefused, "refusing the manifest from \(origin.displayName): \(error)")
        } catch {
            throw UpdateError(.resourceUnavailable, "refusing the manifest from \(origin.displayName): \(error)")
        }
    }

    /// The new revision's file index, into the cache beside the mounted one's, checked
    /// against its manifest.
    private func loadIndex(of manifest: Manifest, into current: MountedRevision) async throws(UpdateError) -> FileIndex {
        let store = current.manager.store
        // A counter of its own: a check's bytes are not the mount's pack traffic.
        let downloader = MountedRevision.downloader(origin: origin, store: store, chunkSize: manifest.chunkSize,
                                                    wire: WireByteCounter(), logger: logger)
        let index: FileIndex
        do {
            index = try await BundleLoader.loadIndex(manifest.index, store: store, downloader: downloader)
            // A large index is checked in parts on other threads while this one waits: not on the cooperative pool.
            try await IOExecutor.cache.run { () throws(FileIndexError) in try index.validate(against: manifest) }
        } catch {
            throw UpdateError(.resourceUnavailable, "the new revision's file index \(manifest.index.file) is unusable: \(error)")
        }
        index.releaseResidentPages()
        return index
    }
}
