/// The bytes a cache directory holds besides packs and their backing files: the file
/// indexes under `index/` and the mounted revision's `manifest.json` (with its signature).
///
/// They are pinned — the purger never deletes them, because the mount cannot serve
/// without its revision's index — but they are on disk like any pack, so they count
/// against `--cache-size` and leave that much less to packs. What is measured is what
/// is really there (`PackStore.measureMetadata()`), not what manifests declare: an index
/// fetched by an update check, or left by an earlier revision, counts until it is removed
/// (`PackStore.removeIndexes(keeping:)`).
public struct CacheMetadata: Sendable, Equatable {
    /// `manifest.json` and `manifest.json.sig`.
    public var manifestBytes: Int64
    /// Every regular file under `index/`.
    public var indexBytes: Int64
    /// How many files are under `index/`.
    public var indexFiles: Int

    public init(manifestBytes: Int64 = 0, indexBytes: Int64 = 0, indexFiles: Int = 0) {
        self.manifestBytes = manifestBytes
        self.indexBytes = indexBytes
        self.indexFiles = indexFiles
    }

    /// Everything together. Saturating: the sizes come from whatever the filesystem reports.
    public var totalBytes: Int64 {
        let (sum, overflow) = manifestBytes.addingReportingOverflow(indexBytes)
        return overflow ? .max : sum
    }
}
