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
            let loaded = try await BundleLoader.loadManifest(from: origin, store: store, limit: configuration.manifestLimit,
                                                         trustedKeys: configuration.trustedKeys, logger: logger)
        let manifest = loaded.manifest
            await ManifestMirrors.adopt(manifest, into: origin, options: configuration.originOptions, logger: logger)
            // The mount's byte counter: the file index's bytes count as the packs' will.
            let wire = WireByteCounter()
            let downloader = MountedRevision.downloader(origin: origin, store: store, chunkSize: manifest.chunkSize,
                                                        wire: wire, logger: logger)
            // The packs needed before the mount is ready travel beside the index.
            let early = EarlyInstall.start(manifest: manifest, store: store, downloader: downloader, logger: logger, progress: progress)
            let index: FileIndex
            do throws(MountError) {
                index = try await BundleLoader.loadIndex(manifest.index, store: store, downloader: downloader)
                do {
                    try index.validate(against: manifest)   // pack numbers and extents: see FileIndex+Manifest
                } catch {
                    throw MountError("the file index \(manifest.index.file) does not match the manifest: \(error)")
                }
            } catch {
                early?.cancel()
                throw error
            }
            index.releaseResidentPages()   // validated: resident memory is what requests touch from now on
            do {
                try await io.run { () throws(StoreError) in try store.saveManifest(loaded.data, signature: loaded.signature) }
            } catch {
                throw MountError("cannot write to cache: \(error)")
            }
            // Indexes of revisions an earlier run served or checked: nothing of them is open now.
            let currentIndex = manifest.index.sha256
            await io.run { _ = store.removeIndexes(keeping: [currentIndex]) }
            let published = PublishedRevision(manifest: manifest, index: index)
            let variants = try variantRequest(configuration, for: manifest)
            let view: VariantView
            do {
                view = try await io.run { () throws(FileIndexError) in
                    let view = try variants.view(of: published)
                    // Resolving read the whole published index again; a view of variants is a copy.
                    if !manifest.variantDeclarations.isEmpty { index.releaseResidentPages() }
                    return view
                }
            } catch {
                throw MountError("the file index \(manifest.index.file) has unusable variant directories: \(error)")
            }
            if !manifest.variantDeclarations.isEmpty {
                logger.info("variants selected", metadata: [
                    "variants": "\(variants.selection(for: manifest))", "packs": "\(view.manifest.packs.count) of \(manifest.packs.count)",
                ])
            }
            // Before the resource manager reconciles with the cache: it then finds them local.
            let fetchedEarly = await early?.value ?? []
            let revision: MountedRevision
            do {
                revision = try await MountedRevision.make(published: published, view: view, variants: variants, store: store,
                                                          origin: origin, wire: wire,
                                                          settings: .init(configuration, io: io, logger: logger), succeeding: nil)
            } catch {
                throw MountError("cannot read the cache index: \(error)")
            }
            revision.manager.countEarlyFetches(fetchedEarly)
            try await InitialInstall.run(manager: revision.manager, progress: progress)
            return PreparedBundle(revision: revision, isSigned: loaded.signature != nil)
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
