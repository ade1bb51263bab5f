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
        withState { state in
            defer { state.metadataBytes = max(0, metadata.totalBytes) }
            return state.metadataBytes
        }
    }

    /// True when the pinned metadata alone is over the byte budget: then no purge can bring
    /// the cache under it, and packs are kept only while retained.
    func metadataExceedsBudget(_ state: State) -> Bool {
        guard let budget = limits.budget else { return false }
        return state.metadataBytes > budget.value
    }
}
