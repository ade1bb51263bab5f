import Foundation
import Logging
import ODRFSCore
import ODRFSFetch
import ODRFSRuntime
import ODRFSStore

/// Loads what a mount needs before anything is mounted: the manifest (online, or the
/// cached one when the origin is unreachable), its signature when keys are trusted, and
/// the file index. Cache reads and writes run on the I/O executor.
enum BundleLoader {
    /// A manifest and the bytes it came from, for the cache.
    struct LoadedManifest: Sendable {
        let data: Data
        /// `manifest.json.sig`, fetched only when keys are trusted.
        let signature: Data?
        let manifest: Manifest
    }

    /// Signature files are one short line; anything longer is refused unread.
    static let signatureLimit = ByteCount(4096)

    /// The manifest from the origin; if the origin is unreachable and the cache holds
    /// the manifest of the version mounted last, that one (offline mode: local packs
    /// work, remote ones fail their opens until the origin is back). With trusted keys,
    /// the manifest (online or cached) must pass ``ManifestTrust``, and its revision is
    /// then recorded in the cache index.
    static func loadManifest(from origin: any Origin, store: PackStore, limit: ByteCount, trustedKeys: [TrustKey],
                             logger: Logger) async throws(MountError) -> LoadedManifest {
        let io = IOExecutor.cache
        let data: Data
        var signature: Data?
        do {
            data = try await origin.data(at: Manifest.fileName, limit: limit)
            if !trustedKeys.isEmpty {
                signature = try await fetchSignature(from: origin)
            }
        } catch {
            let layout = store.layout
            guard error.kind == .unreachable,
                  let cached = await io.run({ FileManager.default.contents(atPath: layout.manifestFile) }) else {
                throw MountError("cannot read the bundle's manifest from \(origin.displayName): \(error)")
            }
            let cachedSignature = await io.run { FileManager.default.contents(atPath: layout.manifestSignatureFile) }
            // The cached manifest was written when the origin last answered: status shows its age.
            if let saved = await io.run({ try? FileManager.default.attributesOfItem(atPath: layout.manifestFile)[.modificationDate] as? Date }) {
                origin.health.forEach { $0.seedLastContact(saved) }
            }
            let loaded: LoadedManifest
            if trustedKeys.isEmpty {
                guard let manifest = try? Manifest.decode(cached) else {
                    throw MountError("cannot read the bundle's manifest from \(origin.displayName): \(error)")
                }
                loaded = LoadedManifest(data: cached, signature: nil, manifest: manifest)
            } else {
                loaded = try await verify(cached, signature: cachedSignature, keys: trustedKeys, store: store,
                                          source: "the cached manifest (origin \(origin.displayName) unreachable)")
            }
            logger.warning("origin unreachable; mounting the cached bundle version offline", metadata: [
                "origin": "\(origin.displayName)", "bundle.version": "\(loaded.manifest.bundleVersion.hex.prefix(12))",
                "revision": "\(loaded.manifest.revision)", "error": "\(error)",
            ])
            return loaded
        }
        if !trustedKeys.isEmpty {
            return try await verify(data, signature: signature, keys: trustedKeys, store: store,
                                    source: "the manifest from \(origin.displayName)")
        }
        do {
            return LoadedManifest(data: data, signature: nil, manifest: try Manifest.decode(data))
        } catch {
            throw MountError("the bundle's manifest from \(origin.displayName) is invalid: \(error)")
        }
    }

    /// `manifest.json.sig`, or nil when the origin has none (ManifestTrust then says "unsigned").
    private static func fetchSignature(from origin: any Origin) async throws(FetchError) -> Data? {
        do {
            return try await origin.data(at: ManifestSignature.fileName, limit: signatureLimit)
        } catch where error.kind == .notFound {
            return nil
        }
    }

    /// The trust check (``ManifestTrust``, the only caller) against the revisions this cache
    /// has seen, and the record of the accepted revision.
    private static func verify(_ data: Data, signature: Data?, keys: [TrustKey], store: PackStore,
                               source: String) async throws(MountError) -> LoadedManifest {
        let io = IOExecutor.cache
        let seen: [KeyID: SeenRevision]
        do {
            seen = try await io.run { () throws(StoreError) in try store.bundleIndex.seenRevisions() }
        } catch {
            throw MountError("cannot read the revisions seen from the cache index: \(error)")
        }
        let now = Date()
        let verified: ManifestTrust.Verified
        do {
            verified = try ManifestTrust(trustedKeys: keys).verify(manifest: data, signature: signature, now: now, seen: seen)
        } catch {
            throw MountError("refusing \(source): \(error)")
        }
        let revision = verified.manifest.revision
        let signer = verified.signer.id
        do {
            try await io.run { () throws(StoreError) in try store.bundleIndex.recordRevision(revision, key: signer, at: now) }
        } catch {
            throw MountError("cannot record the manifest's revision in the cache index: \(error)")
        }
        return LoadedManifest(data: data, signature: signature, manifest: verified.manifest)
    }

    /// The file index, from the cache or downloaded and verified, memory-mapped.
    static func loadIndex(_ reference: IndexReference, store: PackStore, downloader: PackDownloader) async throws(MountError) -> FileIndex {
        if await !IOExecutor.cache.run({ store.contains(reference) }) {
            do {
                try await downloader.fetch(reference)
            } catch {
                throw MountError("cannot fetch the file index: \(error)")
            }
        }
        let path = store.path(of: reference)
        let opened = await IOExecutor.cache.run { () -> Result<FileIndex, FileIndexError> in
            do throws(FileIndexError) { return .success(try FileIndex(contentsOf: path)) } catch { return .failure(error) }
        }
        let index: FileIndex
        switch opened {
        case .success(let value): index = value
        case .failure(let error): throw MountError("the file index \(reference.file) is invalid: \(error)")
        }
        guard index.entryCount == reference.entries else {
            throw MountError("the file index \(reference.file) has \(index.entryCount) entries but the manifest says \(reference.entries)")
        }
        return index
    }
}
