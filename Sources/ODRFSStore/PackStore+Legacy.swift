import Foundation
import Logging
import ODRFSCore

/// Verified packs taken in from a cache of a release before the store, with the rows that
/// vouched for them (recorded in the store's index once it is open).
struct AdoptedPacks: Sendable {
    var rows: [CachedPack] = []
}

extension PackStore {
    /// Takes in the private cache directory a release before the store kept for this origin
    /// (`<store>/<bundle key>`, its default then), without downloading anything again:
    /// - packs whose row still vouches for them move into `packs/` (a rename keeps the
    ///   identity the row recorded); the others into the bundle's `unverified/`, to be
    ///   hashed against the bundle before they are served;
    /// - file indexes, the manifest and its signature move to the bundle's directory, and
    ///   its index (priority overrides, trusted revisions, traces) becomes the bundle's index;
    /// - the directory is removed.
    /// Its lock is taken first: a mount of the old release still using it fails this one
    /// with a message saying so. Returns nil when there is nothing to take in.
    static func takeInLegacyCache(at legacyRoot: String, into layout: CacheLayout, logger: Logger) throws(StoreError) -> AdoptedPacks? {
        let legacy = CacheLayout(root: legacyRoot)
        guard access(legacy.lockFile, F_OK) == 0 else { return nil }
        let fd = try lock(legacy.lockFile, exclusive: true, what: "the cache directory \(legacyRoot) of an older odrfs")
        defer { close(fd) }
        var adopted = AdoptedPacks()
        let rows: [String: CachedPack]
        do {
            let index = try CacheIndex(path: legacy.indexFile)
            rows = Dictionary(try index.allPacks().map { ($0.sha256, $0) }, uniquingKeysWith: { first, _ in first })
        } catch {
            logger.warning("the index of the older cache does not open; its packs will be hashed again", metadata: ["error": "\(error)"])
            rows = [:]
        }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: legacy.packsDirectory)) ?? [] {
            guard name.hasSuffix(".tar"), let hash = ContentHash(hex: String(name.dropLast(4))) else { continue }
            let source = legacy.packsDirectory + "/" + name
            if let row = rows[hash.hex], FileIdentity.of(path: source) == row.identity {
                if rename(source, layout.packsDirectory + "/" + name) == 0 { adopted.rows.append(row) }
            } else {
                _ = rename(source, layout.unverifiedDirectory + "/" + name)
            }
        }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: legacy.indexDirectory)) ?? [] {
            _ = rename(legacy.indexDirectory + "/" + name, layout.indexDirectory + "/" + name)
        }
        if access(layout.manifestFile, F_OK) != 0 {
            _ = rename(legacy.manifestSignatureFile, layout.manifestSignatureFile)
            _ = rename(legacy.manifestFile, layout.manifestFile)
        }
        if access(layout.bundleIndexFile, F_OK) != 0 {
            for suffix in ["-wal", "-shm", ""] { _ = rename(legacy.indexFile + suffix, layout.bundleIndexFile + suffix) }
        }
        logger.notice("took the cache of an older odrfs into the store", metadata: [
            "from": "\(legacyRoot)", "store": "\(layout.root)", "packs": "\(adopted.rows.count)",
        ])
        removeTree(legacyRoot)
        return adopted
    }

    /// Writes the rows of packs taken in (``takeInLegacyCache(at:into:logger:)``) into the
    /// store's index; a pack whose row cannot be written is hashed again by reconcile.
    static func record(_ adopted: AdoptedPacks?, in index: CacheIndex, logger: Logger) {
        for row in adopted?.rows ?? [] {
            do {
                try index.save(row)
            } catch {
                logger.warning("cannot record a pack taken in from an older cache", metadata: ["sha256": "\(row.sha256)", "error": "\(error)"])
            }
        }
    }
}
