#if canImport(Glibc)
import Glibc
#endif
import Foundation
import ODRFSCore

/// A manifest and its signature written and synced under temporary names, not yet the
/// cache's: ``PackStore/commit(_:)`` puts them in place with renames alone.
///
/// A mount stages the new manifest while its file index downloads and commits it once the
/// index is verified and in the cache (an offline mount then finds both): at ten million
/// files the manifest is 71 MB, and writing and syncing it after the index took 0.2 s of the
/// mount's critical path (issue 28). Dropped without a commit, the temporary files go
/// (``discard()``, or the files' own deinit).
public final class StagedManifest: Sendable {
    enum Body: Sendable {
        /// A private cache: the file to rename over `manifest.json`.
        case file(TemporaryFile)
        /// A store: the store already has an object with these bytes (the file `identity`
        /// was compared); the bundle links it, or, should that file have gone or changed by
        /// the commit, writes the object again from `data`.
        case storedObject(String, identity: FileIdentity, data: Data)
        /// A store: a new object, linked as the bundle's manifest, then renamed into the store.
        case newObject(TemporaryFile, object: String)
    }

    let body: Body
    /// The signature's file, or nil when the manifest is unsigned (the commit removes a stale one).
    let signature: TemporaryFile?

    init(body: Body, signature: TemporaryFile?) {
        self.body = body
        self.signature = signature
    }

    /// Removes the temporary files (blocking: on the I/O executor). No effect after a commit.
    public func discard() {
        signature?.discard()
        switch body {
        case .file(let file), .newObject(let file, _): file.discard()
        case .storedObject: break
        }
    }
}

extension PackStore {
    /// Writes the manifest of the mounted bundle and its signature (or removes a stale
    /// one), so a later mount can tell what the cache holds and, offline, check it again:
    /// ``stageManifest(_:signature:)`` and ``commit(_:)`` in one.
    public func saveManifest(_ data: Data, signature: Data? = nil) throws(StoreError) {
        let staged = try stageManifest(data, signature: signature)
        do { try commit(staged) } catch {
            staged.discard()
            throw error
        }
    }

    /// Writes and syncs `data` and `signature` under temporary names; nothing the cache
    /// serves changes until ``commit(_:)``. In a store, an object with the same bytes is
    /// reused rather than written again.
    public func stageManifest(_ data: Data, signature: Data? = nil) throws(StoreError) -> StagedManifest {
        let signatureFile = try signature.map { bytes throws(StoreError) in try writeSynced(bytes, label: "signature") }
        do throws(StoreError) {
            guard isShared else {
                return StagedManifest(body: .file(try writeSynced(data, label: "manifest")), signature: signatureFile)
            }
            let object = layout.sharedManifestPath(sha256: ContentHash.of(data).hex)
            if let identity = FileIdentity.of(path: object), PackStore.boundedContents(of: object, limit: data.count + 1) == data,
               FileIdentity.of(path: object) == identity {
                return StagedManifest(body: .storedObject(object, identity: identity, data: data), signature: signatureFile)
            }
            return StagedManifest(body: .newObject(try writeSynced(data, label: "manifest"), object: object), signature: signatureFile)
        } catch {
            signatureFile?.discard()
            throw error
        }
    }

    /// Makes a staged manifest the cache's. The signature goes first: a crash between the
    /// two renames leaves a pair that fails verification (the mount refuses), never an
    /// unsigned manifest taken as signed.
    public func commit(_ staged: StagedManifest) throws(StoreError) {
        if let signature = staged.signature {
            try publish(signature, to: layout.manifestSignatureFile)
        } else if unlink(layout.manifestSignatureFile) != 0, errno != ENOENT {
            throw StoreError.system("cannot remove", path: layout.manifestSignatureFile)
        }
        switch staged.body {
        case .file(let file):
            try publish(file, to: layout.manifestFile)
        case .storedObject(let object, let identity, let data):
            // The object may have gone since staging (the last bundle linking it dropped it),
            // or been replaced: the link is made to the file that was compared, or not at all.
            if (try? Self.replaceLink(to: object, at: layout.manifestFile, scratch: layout.temporaryDirectory, identity: identity)) == nil {
                try commitNewObject(try writeSynced(data, label: "manifest"), object: object)
            }
        case .newObject(let file, let object):
            try commitNewObject(file, object: object)
        }
    }

    /// Links `file` as the bundle's manifest, then moves it into the store as `object` for
    /// other bundles (if that fails, this bundle's link still holds).
    private func commitNewObject(_ file: TemporaryFile, object: String) throws(StoreError) {
        do {
            try Self.replaceLink(to: file.path, at: layout.manifestFile, scratch: layout.temporaryDirectory)
        } catch {
            file.discard()
            throw error
        }
        if rename(file.path, object) != 0 { unlink(file.path) }
        file.markPublished()
    }

    /// A temporary file holding `data`, synced.
    private func writeSynced(_ data: Data, label: String) throws(StoreError) -> TemporaryFile {
        let file = try makeTemporaryFile(label: label)
        do throws(StoreError) {
            let written = data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) -> Result<Void, StoreError> in
                do throws(StoreError) { try file.write(buffer) } catch { return .failure(error) }
                return .success(())
            }
            try written.get()
            guard fsync(file.descriptor) == 0 else { throw StoreError.system("cannot fsync", path: file.path) }
        } catch {
            file.discard()
            throw error
        }
        return file
    }
}
