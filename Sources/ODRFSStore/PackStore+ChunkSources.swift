import Foundation
import ODRFSCore

/// Where an update finds chunks of its changed files beyond the mounted revision: the other
/// bundles of a machine-wide store.
extension PackStore {
    /// A bundle of the store other than this mount's: its cached manifest and the file
    /// index that manifest names, validated.
    public struct OtherBundle: Sendable {
        public var key: String
        public var manifest: Manifest
        public var index: FileIndex
    }

    /// The other bundles of a store whose cached manifest and current file index read and
    /// validate (a damaged one is skipped: it only offers bytes that would be hashed before
    /// use). Empty for a private cache. Their packs are this store's pack files (``path(of:)``);
    /// whether one is present is for the caller to see. Blocking (reads, maps and validates
    /// files): on the I/O executor.
    public func otherBundles() -> [OtherBundle] {
        guard isShared else { return [] }
        let own = (layout.bundleRoot as NSString).lastPathComponent
        var bundles: [OtherBundle] = []
        for bundle in StoreInventory.readBundles(root: layout.root) where bundle.key != own {
            guard let current = bundle.currentIndex else { continue }
            let directory = layout.root + "/bundles/" + bundle.key
            let indexPath = directory + "/index/" + current + "." + FileIndex.fileExtension
            var info = stat()
            guard let data = Self.boundedContents(of: directory + "/" + Manifest.fileName, limit: Int(Manifest.maximumBytes.value)),
                  let manifest = try? Manifest.decode(data), manifest.index.sha256.hex == current,
                  lstat(indexPath, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, Int64(info.st_size) == manifest.index.bytes.value,
                  let index = try? FileIndex(contentsOf: indexPath), index.chunking != nil else { continue }
            bundles.append(OtherBundle(key: bundle.key, manifest: manifest, index: index))
        }
        return bundles
    }
}
