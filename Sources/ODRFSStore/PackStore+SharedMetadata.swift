import Foundation
import ODRFSCore

/// A store keeps each file index and manifest once, for every bundle (issue 23, item 1):
/// the objects are `indexes/<sha256>.odrx` and `manifests/<sha256>.json`, and a bundle's
/// `index/<sha256>.odrx` and `manifest.json` are hard links to them. The link count is the
/// reference count: an object whose only name is its own (`st_nlink == 1`) is referenced by
/// no bundle, and `odrfs store gc` (or the mount that dropped the last link) removes it.
///
/// Every name is made from a file that is already verified (a downloaded index after its
/// SHA-256 matched the manifest; the manifest the mount accepted), and the bundle's link is
/// made before the object's name, so garbage collection never sees a fresh object with one
/// link. An index found as an object is still hashed against the manifest before a mount
/// trusts it (``PackStore/contains(_:)``), like one found under the bundle.
/// Blocking (link, rename, unlink): on the I/O executor.
extension PackStore {
    /// Places a downloaded, verified file index: the bundle's link first, then the object
    /// (a rename over an object of the same name is harmless: the same verified bytes, and
    /// other bundles' links keep their inode).
    func publishSharedIndex(_ file: TemporaryFile, index: IndexReference) throws(StoreError) {
        guard fsync(file.descriptor) == 0 else {
            let error = StoreError.system("cannot fsync", path: file.path)
            file.discard()
            throw error
        }
        let destination = layout.path(of: index)
        do {
            try Self.replaceLink(to: file.path, at: destination, scratch: layout.temporaryDirectory)
        } catch {
            file.discard()
            throw error
        }
        if rename(file.path, layout.sharedIndexPath(sha256: index.sha256.hex)) != 0 {
            // The bundle's link serves this mount; the store just does not share it yet.
            logger.warning("cannot name a file index in the store", metadata: ["error": "\(String(cString: strerror(errno)))"])
            unlink(file.path)
        }
        file.markPublished()
    }

    /// When the bundle has no copy of `index` but the store has the object: links it in, to
    /// be hashed by the caller before anything trusts it.
    func linkSharedIndex(_ index: IndexReference) {
        let destination = layout.path(of: index)
        guard access(destination, F_OK) != 0 else { return }
        _ = link(layout.sharedIndexPath(sha256: index.sha256.hex), destination)
    }

    /// Removes the store's object `name` if it is the same file as `path` (a damaged copy
    /// found through the bundle's link goes from the store too).
    func unlinkSharedIndex(named name: String, ifSameAs path: String) {
        let object = layout.sharedIndexesDirectory + "/" + name
        if let linked = FileIdentity.of(path: path), FileIdentity.of(path: object) == linked { unlink(object) }
    }

    /// After the bundle dropped its link to an index: removes the object when no other
    /// bundle links it. A bundle linking it at this instant keeps its own link.
    func removeSharedIndexIfUnlinked(named name: String) {
        let object = layout.sharedIndexesDirectory + "/" + name
        var info = stat()
        if lstat(object, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_nlink == 1 { unlink(object) }
    }

    /// Makes `destination` a hard link to `source`, atomically replacing what was there:
    /// a link under a scratch name, renamed over.
    /// With `identity`, the link is made only to that very file (checked on the scratch link,
    /// so a file replaced at `source` meanwhile is never linked).
    static func replaceLink(to source: String, at destination: String, scratch: String,
                            identity: FileIdentity? = nil) throws(StoreError) {
        let temporary = scratch + "/link." + String(UInt64.random(in: .min ... .max), radix: 16)
        guard link(source, temporary) == 0 else { throw StoreError.system("cannot link", path: source) }
        if let identity, FileIdentity.of(path: temporary) != identity {
            unlink(temporary)
            throw StoreError.system("no longer the file compared", path: source, errno: ESTALE)
        }
        guard rename(temporary, destination) == 0 else {
            let error = StoreError.system("cannot rename into place", path: destination)
            unlink(temporary)
            throw error
        }
        let directory = (destination as NSString).deletingLastPathComponent
        let dirfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirfd >= 0 {
            _ = fsync(dirfd)
            close(dirfd)
        }
    }

    /// Names in the store the bundle's indexes and manifest that are not objects yet: those
    /// a store of the previous layout kept per bundle, and those taken in from an older cache.
    /// An object of the same name that already exists is left as it is (the bundle's copy
    /// stays its own until it is dropped; every mount hashes its index again).
    func shareBundleMetadata() {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: layout.indexDirectory)) ?? [] {
            guard name.hasSuffix("." + FileIndex.fileExtension),
                  ContentHash(hex: String(name.dropLast(FileIndex.fileExtension.count + 1))) != nil else { continue }
            let path = layout.indexDirectory + "/" + name
            var info = stat()
            guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_nlink == 1 else { continue }
            _ = link(path, layout.sharedIndexesDirectory + "/" + name)
        }
        var info = stat()
        if lstat(layout.manifestFile, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_nlink == 1,
           let data = Self.boundedContents(of: layout.manifestFile, limit: Int(Manifest.maximumBytes.value)) {
            _ = link(layout.manifestFile, layout.sharedManifestPath(sha256: ContentHash.of(data).hex))
        }
    }
}
