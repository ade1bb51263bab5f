import Foundation
import Logging
import ODRFSCore
import ODRFSFetch
import ODRFSRuntime
import ODRFSStore

/// Everything a mount serves, loaded and checked before anything is mounted: the cache
/// opened and locked, the manifest and file index fetched (or taken from the cache) and
/// validated against each other, the revision built (``MountedRevision``, its resource
/// manager reconciled with the cache), and the base and initial-install packs local.
struct PreparedBundle: Sendable {
    /// The revision to serve first.
    let revision: MountedRevision
    var manifest: Manifest { revision.manifest }
    var index: FileIndex { revision.index }
    var manager: ResourceManager { revision.manager }
    /// Whether the manifest came with a signature a trusted key made.
    let isSigned: Bool

    /// Loads the bundle at `origin` into the cache of `configuration`. Anything wrong with
    /// what the origin serves ends here, as a `MountError` saying what: nothing is mounted.
    static func load(
        _ configuration: MountConfiguration,
        origin: any Origin,
        logger: Logger,
        progress: @escaping @Sendable (Int64, Int64) -> Void
    ) async throws(MountError) -> PreparedBundle {
            // Opening the store (flock, SQLite), writing the manifest and reconciling the cache
            // (which may hash files) block: they run on the I/O executor.
            let io = IOExecutor.cache
            let store: PackStore
            do {
                store = try await io.run { () throws(StoreError) in
                    let store = try configuration.openStore(logger: logger)
                    store.recordMount(mountpoint: configuration.mountpoint, origin: configuration.origin)
                    return store
                }
            } catch {
                throw MountError("cannot use cache: \(error)")
            }
            // The mount's byte counter: the file index's bytes count as the packs' will.
            let wire = WireByteCounter()
            var work = LoadingWork(io: io)
            // The file index is the most a mount reads before it is ready (1 GB for ten million
            // files, issue 28): its download starts as soon as trusted bytes name it (the
            // manifest's first bytes without trusted keys, the authenticated whole with them)
            // and overlaps the rest of the manifest's download and its decoding. It is verified
            // against that name's hash like any download, and used only if the decoded
            // manifest names the same index.
            func startIndex(_ reference: IndexReference) -> EarlyIndex {
                EarlyIndex(reference: reference, origin: origin, store: store, wire: wire, logger: logger)
            }
            do throws(MountError) {
                let fetched = try await BundleLoader.fetchManifest(from: origin, store: store, limit: configuration.manifestLimit,
                                                                   trustedKeys: configuration.trustedKeys) { reference in
                    work.earlyIndex = startIndex(reference)
                }
                let authenticated = try BundleLoader.authenticate(fetched, trustedKeys: configuration.trustedKeys)
                if work.earlyIndex == nil {
                    work.earlyIndex = ManifestReader.indexReference(in: fetched.data).map(startIndex)
                }
                let (revision, isSigned) = try await load(configuration, fetched: fetched, authenticated: authenticated, origin: origin,
                                                          store: store, wire: wire, work: &work, logger: logger, progress: progress)
                try await InitialInstall.run(manager: revision.manager, progress: progress)
                return PreparedBundle(revision: revision, isSigned: isSigned)
            } catch {
                await work.abandon()
                throw error
            }
    }

    /// The rest of ``load(_:origin:logger:progress:)`` once the manifest's bytes are in: every
    /// task it starts goes into `work`, which the caller abandons if this throws.
    private static func load(
        _ configuration: MountConfiguration, fetched: BundleLoader.FetchedManifest, authenticated: ManifestTrust.Authenticated?,
        origin: any Origin, store: PackStore, wire: WireByteCounter, work: inout LoadingWork, logger: Logger,
        progress: @escaping @Sendable (Int64, Int64) -> Void
    ) async throws(MountError) -> (MountedRevision, isSigned: Bool) {
            let io = work.io
            let loaded = try await BundleLoader.decodeManifest(fetched, authenticated: authenticated, origin: origin, store: store,
                                                               trustedKeys: configuration.trustedKeys, logger: logger)
            let manifest = loaded.manifest
            await ManifestMirrors.adopt(manifest, into: origin, options: configuration.originOptions, logger: logger)
            let downloader = MountedRevision.downloader(origin: origin, store: store, chunkSize: manifest.chunkSize,
                                                        wire: wire, logger: logger)
            // Checked before any pack moves: it needs only the manifest.
            let variants = try variantRequest(configuration, for: manifest)
            // Written and synced while the index downloads, put in place once the index is
            // (an offline mount of it then finds both): 71 MB at 100,000 packs, 0.2 s that the
            // mount waited for after the index.
            work.stagedManifest = Task { [data = loaded.data, signature = loaded.signature] in
                await io.run { () -> Result<StagedManifest, StoreError> in
                    do throws(StoreError) { return .success(try store.stageManifest(data, signature: signature)) } catch { return .failure(error) }
                }
            }
            // The packs needed before the mount is ready travel beside the index.
            // One tag → packs table for the early install and the first manager.
            let tagPacks = TagPackIndex(manifest)
            let early = EarlyInstall.start(manifest: manifest, tagPacks: tagPacks, store: store, downloader: downloader, logger: logger, progress: progress)
            work.earlyPacks = early
            let settings = MountedRevision.Settings(configuration, io: io, logger: logger)
            // Without variants the served manifest is the published one: the revision's manager
            // is built now, while the index downloads (the index was the critical path: 1.2 s of
            // 1.9 at ten million files, then 0.4 s of manager after it). After the early packs:
            // reconciling with the cache then finds them local.
            let firstManager = manifest.variantDeclarations.isEmpty
                ? Task { () -> Result<MountedRevision.FirstManager, StoreError>? in
                    _ = await early?.value
                    // A load that failed meanwhile: no manager, so no reconciliation with the
                    // cache (its trace session begins only once the revision is served).
                    guard !Task.isCancelled else { return nil }
                    do throws(StoreError) {
                        return .success(try await MountedRevision.firstManager(manifest: manifest, tagPacks: tagPacks, variants: variants, store: store,
                                                                               origin: origin, wire: wire, settings: settings))
                    } catch {
                        return .failure(error)
                    }
                }
                : nil
            work.firstManager = firstManager
            let index: FileIndex
            if let earlyIndex = work.earlyIndex, earlyIndex.reference == manifest.index {
                index = try await earlyIndex.value()
            } else {
                await work.earlyIndex?.cancel()
                index = try await BundleLoader.loadIndex(manifest.index, store: store, downloader: downloader)
            }
            let published = PublishedRevision(manifest: manifest, index: index)
            // On the I/O executor: a large index is checked in parts on other threads while
            // this one waits, and resolving variants walks the whole index (page faults).
            let view = try await io.run { () throws(MountError) -> VariantView in
                do {
                    try index.validate(against: manifest)   // pack numbers and extents: see FileIndex+Manifest
                } catch {
                    throw MountError("the file index \(manifest.index.file) does not match the manifest: \(error)")
                }
                index.releaseResidentPages()   // validated: resident memory is what requests touch from now on
                let view: VariantView
                do { view = try variants.view(of: published) } catch {
                    throw MountError("the file index \(manifest.index.file) has unusable variant directories: \(error)")
                }
                // Resolving read the whole published index again; a view of variants is a copy.
                if !manifest.variantDeclarations.isEmpty { index.releaseResidentPages() }
                return view
            }
            if !manifest.variantDeclarations.isEmpty {
                logger.info("variants selected", metadata: [
                    "variants": "\(variants.selection(for: manifest))", "packs": "\(view.manifest.packs.count) of \(manifest.packs.count)",
                ])
            }
            // Before the resource manager reconciles with the cache: it then finds them local.
            let fetchedEarly = await early?.value ?? []
            let revision: MountedRevision
            if let firstManager {
                switch await firstManager.value {
                case .success(let first):
                    revision = MountedRevision.assemble(first, published: published, view: view, variants: variants, settings: settings)
                case .failure(let error):
                    throw MountError("cannot read the cache index: \(error)")
                case nil:
                    throw MountError("the mount was cancelled while it loaded")
                }
            } else {
                do {
                    revision = try await MountedRevision.make(published: published, view: view, variants: variants, store: store,
                                                              origin: origin, wire: wire, settings: settings, succeeding: nil)
                } catch {
                    throw MountError("cannot read the cache index: \(error)")
                }
            }
            work.builtManager = revision.manager
            revision.manager.countEarlyFetches(fetchedEarly)
            // The index is verified and in the cache: the manifest that names it becomes the cache's.
            try await work.commitManifest(into: store)
            // Indexes of revisions an earlier run served or checked: nothing of them is open now,
            // and the saved manifest names the new one (removed before, a failed save would
            // leave the cache's manifest without its index).
            let currentIndex = manifest.index.sha256
            // Measured again now that the new index is in `index/` and old ones are gone: a
            // manager built while the index downloaded counted the cache without it, and the
            // initial install purges by that figure.
            // The trace session begins only now, for a revision that is served (the initial
            // install is its first entry).
            await io.run {
                _ = store.removeIndexes(keeping: [currentIndex])
                revision.manager.measureMetadata()
                revision.manager.beginTraceSession(now: Date())
            }
            return (revision, loaded.signature != nil)
    }

    /// `--variant` and the caller's locale as a ``VariantRequest``; a key the bundle does
    /// not declare is a mistake worth stopping for (a typo would silently serve defaults).
    static func variantRequest(_ configuration: MountConfiguration, for manifest: Manifest) throws(MountError) -> VariantRequest {
        let explicit: VariantPreferences
        do {
            explicit = try VariantPreferences(wire: configuration.variants)
        } catch {
            throw MountError("--variant: \(error.reason)")
        }
        // Values are not checked: one the bundle lacks falls back by the selection's order.
        if let problem = explicit.problem(against: manifest.variantDeclarations, valuesToo: false) {
            throw MountError("--variant: \(problem)")
        }
        return VariantRequest(explicit: explicit, environment: configuration.localeEnvironment)
    }
}

/// What a load starts before it knows that it will succeed: the file index's early download,
/// the early packs, the first manager, the staged manifest and the revision's manager. A
/// failed load abandons them as one (``abandon()``), so no failure path can leave one
/// running: a manager reconciling with the cache of a mount that failed or holding its lock,
/// packs still moving, temporary files left behind.
private struct LoadingWork {
    let io: IOExecutor
    var earlyIndex: EarlyIndex?
    var earlyPacks: Task<[EarlyInstall.Fetched], Never>?
    var firstManager: Task<Result<MountedRevision.FirstManager, StoreError>?, Never>?
    var stagedManifest: Task<Result<StagedManifest, StoreError>, Never>?
    /// The built revision's manager, once there is one (it is the first manager's, when that was built).
    var builtManager: ResourceManager?

    init(io: IOExecutor) { self.io = io }

    /// Puts the staged manifest in place (renames only; its bytes were synced while the
    /// index downloaded).
    mutating func commitManifest(into store: PackStore) async throws(MountError) {
        guard let staging = stagedManifest else { return }
        stagedManifest = nil
        let committed: Result<Void, StoreError>
        switch await staging.value {
        case .success(let staged):
            committed = await io.run { () -> Result<Void, StoreError> in
                do throws(StoreError) { try store.commit(staged) } catch {
                    staged.discard()
                    return .failure(error)
                }
                return .success(())
            }
        case .failure(let error):
            committed = .failure(error)
        }
        if case .failure(let error) = committed { throw MountError("cannot write to cache: \(error)") }
    }

    /// Stops every task and waits for each: nothing of the loading outlives it. A manager
    /// that was built flushes and lets the cache go.
    func abandon() async {
        earlyPacks?.cancel()
        firstManager?.cancel()
        await earlyIndex?.cancel()
        if case .success(let first)?? = await firstManager?.value {
            if builtManager == nil { await first.manager.shutdown() }
        }
        await builtManager?.shutdown()
        _ = await earlyPacks?.value
        if case .success(let staged)? = await stagedManifest?.value {
            await io.run { staged.discard() }
        }
    }
}

/// The file index's download (and opening), started from the name in the manifest's bytes
/// before the manifest is decoded (``ManifestReader/indexReference(in:)``).
private struct EarlyIndex: Sendable {
    let reference: IndexReference
    private let task: Task<Result<FileIndex, MountError>, Never>

    init(reference: IndexReference, origin: any Origin, store: PackStore, wire: WireByteCounter, logger: Logger) {
        self.reference = reference
        // Fetching an index uses no chunk size: the manifest's is not known yet.
        let downloader = MountedRevision.downloader(origin: origin, store: store, chunkSize: Manifest.defaultChunkSize,
                                                    wire: wire, logger: logger)
        task = Task {
            do throws(MountError) {
                return .success(try await BundleLoader.loadIndex(reference, store: store, downloader: downloader))
            } catch {
                return .failure(error)
            }
        }
    }

    func value() async throws(MountError) -> FileIndex {
        try await task.value.get()
    }

    /// Stops the download and waits for it, so that nothing of it outlives the mount's loading.
    func cancel() async {
        task.cancel()
        _ = await task.value
    }
}
