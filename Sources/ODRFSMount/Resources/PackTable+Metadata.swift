import ODRFSStore

extension PackTable.State {
    /// What the cache holds against `--cache-size`: local packs, their backing files,
    /// orphans and the pinned metadata (file indexes, manifest). Saturating: the metadata
    /// figure is whatever the filesystem reported.
    var budgetedBytes: Int64 {
        let (sum, overflow) = cachedBytes.addingReportingOverflow(metadataBytes)
        return overflow ? .max : sum
    }
}

extension PackTable {
    /// Records the pinned metadata measured on the I/O executor. Returns the previous figure.
    @discardableResult
    func setMetadata(_ metadata: CacheMetadata) -> Int64 {
        // Bounded far below Int64.max, so the budget sums (`CacheLimits.bytesToFree`) cannot
        // overflow whatever sparse file a filesystem reports under `index/`.
        let bytes = min(max(0, metadata.totalBytes), Self.metadataCeiling)
        return withState { state in
            defer { state.metadataBytes = bytes }
            return state.metadataBytes
        }
    }

    /// 1 EiB: more than any cache directory holds.
    static let metadataCeiling: Int64 = 1 << 60
}
