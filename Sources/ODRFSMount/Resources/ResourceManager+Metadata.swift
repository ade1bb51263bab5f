import Foundation
import ODRFSCore
import ODRFSStore

extension ResourceManager {
    /// Measures the pinned metadata the cache directory holds (file indexes, manifest and
    /// signature) and records it in the cache ledger, where it counts against the budget.
    /// Called when the manager starts, at mount once the new index is in place (a first
    /// manager is built while it downloads), on every maintenance pass (an update check may
    /// have fetched an index since) and after an update dropped a revision.
    /// Blocking (a directory listing and `lstat`s): I/O executor only.
    func measureMetadata() {
        table.setMetadata(store.measureMetadata())
    }

    /// After an update switched to this manager's revision: deletes the file indexes of
    /// every revision but this one and `previous` (the one just replaced, whose handles may
    /// still be open), so a dropped revision's index stops holding cache space, then
    /// measures again. Indexes written since `updateBegan` stay: a check beside the update
    /// fetched them. Blocking (unlink): I/O executor only.
    func releaseDroppedIndexes(keepingPrevious previous: IndexReference?, updateBegan: Date? = nil) {
        var kept: Set<ContentHash> = [manifest.index.sha256]
        if let previous { kept.insert(previous.sha256) }
        store.removeIndexes(keeping: kept, sparingModifiedSince: updateBegan)
        measureMetadata()
    }
}
