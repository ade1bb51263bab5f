import Foundation
import Logging
import ODRFSCore
import ODRFSFetch
import ODRFSRuntime
import ODRFSStore

/// Loads what a mount needs before anything is mounted: the manifest (online, or the
/// cached one when the origin is unreachable) and the file index. Cache reads and writes
/// run on the I/O executor.
enum BundleLoader {
    /// The manifest from the origin; if the origin is unreachable and the cache holds
    /// the manifest of the version mounted last, that one (offline mode: local packs
    /// work, remote ones fail their opens until the origin is back).
    static func loadManifest(from origin: any Origin, store: PackStore, limit: ByteCount, logger: Logger) async throws(MountError) -> (Data, Manifest) {
        let data: Data
        do {
            data = try await origin.data(at: Manifest.fileName, limit: limit)
        } catch {
            let path = store.layout.manifestFile
            guard error.kind == .unreachable,
                  let cached = await IOExecutor.cache.run({ FileManager.default.contents(atPath: path) }),
                  let manifest = try? Manifest.decode(cached) else {
                throw MountError("cannot read the bundle's manifest from \(origin.displayName): \(error)")
            }
            logger.warning("origin unreachable; mounting the cached bundle version offline", metadata: [
                "origin": "\(origin.displayName)", "bundle.version": "\(manifest.bundleVersion.hex.prefix(12))", "error": "\(error)",
            ])
            return (cached, manifest)
        }
        do {
            return (data, try Manifest.decode(data))
        } catch {
            throw MountError("the bundle's manifest from \(origin.displayName) is invalid: \(error)")
        }
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
