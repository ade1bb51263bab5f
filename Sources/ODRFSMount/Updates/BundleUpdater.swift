import Foundation
import Logging
import ODRFSControl
import ODRFSCore
import ODRFSFetch
import ODRFSRuntime
import ODRFSStore
import FUSEKit
import Synchronization

/// `odrfs update`: asks the origin for its manifest, compares it with the mounted revision
/// and says what an update would cost (``UpdatePlan``).
///
/// A check reads the manifest (and, with `--trust-key`, its signature) and the new file
/// index, which is small and content-addressed, into the cache; it never fetches a pack.
/// A manifest older than the mounted one is refused as a rollback, as is (with trusted
/// keys) one that is unsigned or older than a revision already seen. The switch itself
/// is in `BundleUpdater+Switch.swift`; one update runs at a time.
final class BundleUpdater: Sendable {
    /// A newer revision, checked and ready to be planned against.
    struct Candidate: Sendable {
        let data: Data
        let signature: Data?
        let manifest: Manifest
        let index: FileIndex
        let plan: UpdatePlan
    }

    let origin: any Origin
    let fileSystem: RevisionSwitchingFileSystem
    let revisions: MountRevisions
    /// Tells the kernel what to forget after a switch; nil in tests without a mount.
    let kernel: FUSESession?
    let trustedKeys: [TrustKey]
    let manifestLimit: ByteCount
    let maximumConcurrentDownloads: Int
    /// `--fetch-timeout`: the longest the fetch phase of an update may go without progress.
    let fetchDeadline: Duration
    /// `--low-speed-limit`: slower than this, bytes are no progress for that bound.
    let lowSpeedLimit: ByteCount
    let logger: Logger
    /// Set while an update runs: a second one is refused rather than queued.
    let busy = Mutex(false)
    /// The manifest's ETag at the last periodic check, for the next conditional GET.
    let manifestETag = Mutex<String?>(nil)

    init(origin: any Origin, fileSystem: RevisionSwitchingFileSystem, revisions: MountRevisions, kernel: FUSESession?,
         configuration: MountConfiguration, logger: Logger) {
        self.origin = origin
        self.fileSystem = fileSystem
        self.revisions = revisions
        self.kernel = kernel
        self.trustedKeys = configuration.trustedKeys
        self.manifestLimit = configuration.manifestLimit
        self.maximumConcurrentDownloads = configuration.maximumConcurrentDownloads
        self.fetchDeadline = configuration.originOptions.fetchDeadline
        self.lowSpeedLimit = configuration.originOptions.lowSpeedLimit
        self.logger = logger
    }

    /// Fetches and checks the origin's manifest; nil candidate when it is the mounted bundle.
    /// `prefetched`: the manifest's bytes when the caller already has them.
    func check(prefetched: Data? = nil) async throws(ControlError) -> (report: UpdateReport, candidate: Candidate?) {
        let served = fileSystem.served
        let (manager, index) = (served.manager, served.index)
        let mounted = manager.manifest
        let (data, signature, available) = try await fetchManifest(prefetched: prefetched)
        manager.updateCheck.record(availableRevision: available.revision, at: Date())
        guard available.revision >= mounted.revision else {
            throw ControlError(.rollbackRefused, "refusing revision \(available.revision) from \(origin.displayName): the mount serves revision \(mounted.revision), and updates never go back")
        }
        guard available.bundleVersion != mounted.bundleVersion else {
            return (UpdateReport(mountedRevision: mounted.revision, availableRevision: available.revision,
                                 changedPacks: [], downloadBytes: 0, reusedBytes: 0), nil)
        }
        let newIndex = try await loadIndex(of: available)
        let local = manager.localOrRetainedPacks()
        // Walks both memory-mapped indexes (page faults are disk reads): on the I/O executor.
        let plan = await manager.io.run {
            UpdatePlan.make(mounted: mounted, mountedIndex: index, local: local, available: available, availableIndex: newIndex)
        }
        let report = UpdateReport(mountedRevision: mounted.revision, availableRevision: available.revision,
                                  changedPacks: plan.changedPacks.map { available.pack($0).id.rawValue },
                                  downloadBytes: plan.downloadBytes, reusedBytes: plan.reusedBytes)
        logger.info("update check", metadata: [
            "revision": "\(mounted.revision)", "available.revision": "\(available.revision)",
            "changed.packs": "\(plan.changedPacks.count)", "download.bytes": "\(plan.downloadBytes)",
            "reused.bytes": "\(plan.reusedBytes)",
        ])
        return (report, Candidate(data: data, signature: signature, manifest: available, index: newIndex, plan: plan))
    }

    /// A check from the interval timer (`--update-interval`): a conditional GET with the
    /// ETag of the last one, so nothing but a 304 travels while the manifest is unchanged;
    /// nil then. Origins without ETags (a local dist dir) are simply read again
    /// (``Origin/conditionalData(at:limit:etag:)``; a ``MirrorSet`` asks its healthiest server).
    func periodicCheck() async throws(ControlError) -> UpdateReport? {
        let etag = manifestETag.withLock { $0 }
        let answer: ConditionalFetch
        do {
            answer = try await origin.conditionalData(at: Manifest.fileName, limit: manifestLimit, etag: etag)
        } catch {
            throw Self.controlError(error, "cannot check \(origin.displayName) for updates")
        }
        let prefetched: Data
        switch answer {
        case .notModified:
            revisions.current.updateCheck.touch(at: Date())
            return nil
        case .modified(let data, let etag):
            manifestETag.withLock { $0 = etag }
            prefetched = data
        }
        return try await check(prefetched: prefetched).report
    }

    private func fetchManifest(prefetched: Data?) async throws(ControlError) -> (Data, Data?, Manifest) {
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
            throw Self.controlError(error, "cannot read the manifest from \(origin.displayName)")
        }
        if trustedKeys.isEmpty {
            do {
                return (data, nil, try Manifest.decode(data))
            } catch {
                throw ControlError(.resourceUnavailable, "the manifest from \(origin.displayName) is invalid: \(error)")
            }
        }
        let manager = revisions.current
        let store = manager.store
        let seen: [KeyID: SeenRevision]
        do {
            seen = try await manager.io.run { () throws(StoreError) in try store.index.seenRevisions() }
        } catch {
            throw ControlError(.internalError, "cannot read the revisions seen from the cache index: \(error)")
        }
        do {
            let verified = try ManifestTrust(trustedKeys: trustedKeys).verify(manifest: data, signature: signature, now: Date(), seen: seen)
            return (data, signature, verified.manifest)
        } catch where error.kind == .rollback {
            throw ControlError(.rollbackRefused, "refusing the manifest from \(origin.displayName): \(error)")
        } catch {
            throw ControlError(.resourceUnavailable, "refusing the manifest from \(origin.displayName): \(error)")
        }
    }

    private func loadIndex(of manifest: Manifest) async throws(ControlError) -> FileIndex {
        let manager = revisions.current
        let downloader = PackDownloader(origin: origin, store: manager.store, chunkSize: manifest.chunkSize, logger: logger)
        let index: FileIndex
        do {
            index = try await BundleLoader.loadIndex(manifest.index, store: manager.store, downloader: downloader)
            try index.validate(against: manifest)
        } catch {
            throw ControlError(.resourceUnavailable, "the new revision's file index \(manifest.index.file) is unusable: \(error)")
        }
        return index
    }

    static func controlError(_ error: FetchError, _ context: String) -> ControlError {
        switch error.kind {
        case .unreachable, .unauthorized, .invalidOrigin, .unsupported:
            return ControlError(.originUnreachable, "\(context): \(error)")
        case .cancelled:
            return ControlError(.cancelled, "\(context): \(error)")
        default:
            return ControlError(.resourceUnavailable, "\(context): \(error)")
        }
    }
}
