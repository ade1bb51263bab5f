import Foundation
import ODRFSCore

extension PackStore {
    /// Measures the pinned metadata the cache directory holds now: the manifest and its
    /// signature, and every regular file under `index/` (`lstat`, so a symlink planted there
    /// counts as itself, not as its target). Blocking (a directory listing and one `lstat`
    /// per file): call it on the I/O executor.
    public func measureMetadata() -> CacheMetadata {
        var metadata = CacheMetadata()
        for path in [layout.manifestFile, layout.manifestSignatureFile] {
            metadata.manifestBytes = Self.saturatingAdd(metadata.manifestBytes, Self.regularFileBytes(at: path) ?? 0)
        }
        for name in indexFileNames() {
            guard let bytes = Self.regularFileBytes(at: layout.indexDirectory + "/" + name) else { continue }
            metadata.indexBytes = Self.saturatingAdd(metadata.indexBytes, bytes)
            metadata.indexFiles += 1
        }
        return metadata
    }

    /// Deletes every cached file index except those named by `kept` (the revisions the mount
    /// serves or may still serve: the current one and the one an update just replaced), so
    /// a dropped revision's index stops holding cache space. Files under `index/` that are
    /// not `<sha256>.odrx` are left alone: the store never wrote them. An index written at
    /// or after `sparingModifiedSince` is left too: an update check running beside the update
    /// may have just fetched it and be about to map it (it is counted, and goes at the next
    /// update or mount). Returns the files removed and their bytes. Blocking (unlink): call
    /// it on the I/O executor.
    @discardableResult
    public func removeIndexes(keeping kept: Set<ContentHash>, sparingModifiedSince: Date? = nil) -> (files: Int, bytes: Int64) {
        let keptNames = Set(kept.map { $0.hex + "." + FileIndex.fileExtension })
        var removed = (files: 0, bytes: Int64(0))
        for name in indexFileNames() where name.hasSuffix("." + FileIndex.fileExtension) && !keptNames.contains(name) {
            let path = layout.indexDirectory + "/" + name
            if let since = sparingModifiedSince, let modified = Self.modificationDate(at: path), modified >= since { continue }
            let bytes = Self.regularFileBytes(at: path) ?? 0
            guard unlink(path) == 0 else {
                logger.warning("cannot remove the file index of a dropped revision", metadata: [
                    "path": "\(path)", "error": "\(String(cString: strerror(errno)))",
                ])
                continue
            }
            if isShared { removeSharedIndexIfUnlinked(named: name) }
            removed.files += 1
            removed.bytes = Self.saturatingAdd(removed.bytes, bytes)
        }
        if removed.files > 0 {
            logger.info("removed file indexes of dropped revisions", metadata: [
                "files": "\(removed.files)", "bytes": "\(removed.bytes)",
            ])
        }
        return removed
    }

    private func indexFileNames() -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: layout.indexDirectory)) ?? []
    }

    /// The size of the regular file at `path`, nil if it is absent or anything else.
    private static func regularFileBytes(at path: String) -> Int64? {
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int64(info.st_size)
    }

    /// When the file at `path` was last written, nil if it is absent.
    private static func modificationDate(at path: String) -> Date? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(info.st_mtim.tv_sec) + TimeInterval(info.st_mtim.tv_nsec) / 1e9)
    }

    private static func saturatingAdd(_ a: Int64, _ b: Int64) -> Int64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? .max : sum
    }
}
