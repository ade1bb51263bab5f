import Foundation
import Logging
import ODRFSCore
import NIOCore
import ODRFSFetch
import ODRFSRuntime
import ODRFSStore

/// Loads what a mount needs before anything is mounted: the manifest (online, or the
/// cached one when the origin is unreachable), its signature when keys are trusted, and
/// the file index. Cache reads and writes run on the I/O executor.
///
/// In three steps, so that the caller can start the file index's download (whose name it
/// reads from trusted bytes, ``ManifestReader/indexReference(in:)``: the first bytes to arrive
/// without trusted keys, the authenticated whole with them) while the manifest arrives and is
/// decoded: ``fetchManifest(from:store:limit:trustedKeys:whenIndexIsNamed:)``,
/// ``authenticate(_:trustedKeys:)``, ``decodeManifest(_:authenticated:origin:store:trustedKeys:logger:)``.
enum BundleLoader {
    /// A manifest and the bytes it came from, for the cache.
    struct LoadedManifest: Sendable {
        let data: Data
        /// `manifest.json.sig`, fetched only when keys are trusted.
        let signature: Data?
        let manifest: Manifest
    }

    /// How far into a manifest's bytes the index's reference is looked for while they arrive.
    static let indexSearchBytes = 64 << 10

    /// Signature files are one short line; anything longer is refused unread.
    static let signatureLimit = ByteCount(4096)

    /// A manifest's bytes as the origin served them, or as the cache kept them when the
    /// origin is unreachable; nothing in them is trusted yet.
    struct FetchedManifest: Sendable {
        let data: Data
        let signature: Data?
        /// Where the bytes came from, for messages.
        let source: String
        /// Why the origin's own manifest is not used (it is unreachable); nil for bytes from the origin.
        let offline: FetchError?
    }

    /// The manifest from the origin; if the origin is unreachable and the cache holds
    /// the manifest of the version mounted last, that one (offline mode: local packs
    /// work, remote ones fail their opens until the origin is back).
    ///
    /// Without trusted keys, `whenIndexIsNamed` is called (at most once, as the bytes arrive)
    /// with the file index's reference as soon as the bytes naming it are in: served bytes are
    /// what such a mount trusts, and the index's download can start while the rest of the
    /// manifest arrives (71 MB at ten million files: 0.2 s over HTTP, issue 28). Whatever it
    /// starts is checked against the decoded manifest's reference before use. With keys,
    /// nothing is read before the whole is authenticated, and it is not called.
    static func fetchManifest(from origin: any Origin, store: PackStore, limit: ByteCount, trustedKeys: [TrustKey],
                              whenIndexIsNamed: (IndexReference) -> Void = { _ in }) async throws(MountError) -> FetchedManifest {
        let io = IOExecutor.cache
        do {
            var data = Data()
            var searching = trustedKeys.isEmpty
            // Parsed again only once the prefix has doubled: a server that trickles bytes one
            // at a time costs a few parses, not one per byte.
            var parsedUpTo = 0
            try await origin.download(Manifest.fileName, expectedBytes: limit) { (bytes: ByteBuffer) throws(FetchError) in
                data.append(contentsOf: bytes.readableBytesView)
                guard searching, data.count >= 2 * parsedUpTo else { return }
                parsedUpTo = data.count
                if let reference = ManifestReader.indexReference(in: data) {
                    searching = false
                    whenIndexIsNamed(reference)
                } else if data.count >= indexSearchBytes {
                    // Not near the start (our builder sorts keys: "index" is the fifth): the
                    // whole manifest will name it; no prefix is parsed again and again.
                    searching = false
                }
            }
            let signature = trustedKeys.isEmpty ? nil : try await fetchSignature(from: origin)
            return FetchedManifest(data: data, signature: signature, source: "the manifest from \(origin.displayName)", offline: nil)
        } catch {
            let layout = store.layout
            guard error.kind == .unreachable,
                  let cached = await io.run({ PackStore.boundedContents(of: layout.manifestFile, limit: Int(limit.value)) }) else {
                throw MountError("cannot read the bundle's manifest from \(origin.displayName): \(error)")
            }
            let cachedSignature = await io.run { FileManager.default.contents(atPath: layout.manifestSignatureFile) }
            // The cached manifest was written when the origin last answered: status shows its age.
            if let saved = await io.run({ try? FileManager.default.attributesOfItem(atPath: layout.manifestFile)[.modificationDate] as? Date }) {
                origin.health.forEach { $0.seedLastContact(saved) }
            }
            return FetchedManifest(data: cached, signature: cachedSignature,
                                   source: "the cached manifest (origin \(origin.displayName) unreachable)", offline: error)
        }
    }

    /// With trusted keys, the check that a trusted key signed exactly these bytes (the first
    /// part of ``ManifestTrust``); nil without keys. Only authenticated bytes (or bytes a mount
    /// without keys trusts as served) may be read before ``decodeManifest(_:authenticated:origin:store:trustedKeys:logger:)``.
    static func authenticate(_ fetched: FetchedManifest, trustedKeys: [TrustKey]) throws(MountError) -> ManifestTrust.Authenticated? {
        guard !trustedKeys.isEmpty else { return nil }
        do {
            return try ManifestTrust(trustedKeys: trustedKeys).authenticate(manifest: fetched.data, signature: fetched.signature)
        } catch {
            throw MountError("refusing \(fetched.source): \(error)")
        }
    }

    /// The fetched manifest decoded and validated; with trusted keys it must pass the rest of
    /// ``ManifestTrust`` (expiry, rollback), and its revision is then recorded in the cache index.
    static func decodeManifest(_ fetched: FetchedManifest, authenticated: ManifestTrust.Authenticated?, origin: any Origin,
                               store: PackStore, trustedKeys: [TrustKey], logger: Logger) async throws(MountError) -> LoadedManifest {
        let loaded: LoadedManifest
        if let authenticated {
            loaded = try await verify(authenticated, signature: fetched.signature, keys: trustedKeys, store: store, source: fetched.source)
        } else if let offline = fetched.offline {
            guard let manifest = try? Manifest.decode(fetched.data) else {
                throw MountError("cannot read the bundle's manifest from \(origin.displayName): \(offline)")
            }
            loaded = LoadedManifest(data: fetched.data, signature: nil, manifest: manifest)
        } else {
            do {
                loaded = LoadedManifest(data: fetched.data, signature: nil, manifest: try Manifest.decode(fetched.data))
            } catch {
                throw MountError("the bundle's manifest from \(origin.displayName) is invalid: \(error)")
            }
        }
        if let offline = fetched.offline {
            logger.warning("origin unreachable; mounting the cached bundle version offline", metadata: [
                "origin": "\(origin.displayName)", "bundle.version": "\(loaded.manifest.bundleVersion.hex.prefix(12))",
                "revision": "\(loaded.manifest.revision)", "error": "\(offline)",
            ])
        }
        return loaded
    }

    /// `manifest.json.sig`, or nil when the origin has none (ManifestTrust then says "unsigned").
    private static func fetchSignature(from origin: any Origin) async throws(FetchError) -> Data? {
        do {
            return try await origin.data(at: ManifestSignature.fileName, limit: signatureLimit)
        } catch where error.kind == .notFound {
            return nil
        }
    }

    /// The rest of the trust check (``ManifestTrust``, the only caller) against the revisions
    /// this cache has seen, and the record of the accepted revision.
    private static func verify(_ authenticated: ManifestTrust.Authenticated, signature: Data?, keys: [TrustKey], store: PackStore,
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
            verified = try ManifestTrust(trustedKeys: keys).verify(authenticated, now: now, seen: seen)
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
        return LoadedManifest(data: authenticated.data, signature: signature, manifest: verified.manifest)
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
