import Synchronization

/// Counts the index entries a mount has served since the index's pages were last released,
/// and says when to release them again.
///
/// A walk (`find`, `du`, `os.walk`) touches every record and name of the memory-mapped
/// index once; without a release they all stay in the daemon's resident set for the life of
/// the mount (issue 28: 107 MiB of RssFile after a `find` of 1,000,000 files, over the
/// 150 MiB bar). Releasing after every `threshold` entries bounds what walks leave resident
/// to about `threshold` records and their names, while a page a request needs again is a
/// minor fault from the page cache.
public final class ResidentPageBudget: Sendable {
    /// Entries served between two releases: 65,536 records are 4 MiB, and their names a few more.
    public static let defaultThreshold = 65_536

    let threshold: Int
    private let served = Atomic<Int>(0)  // entries served since init

    public init(threshold: Int = ResidentPageBudget.defaultThreshold) {
        self.threshold = max(threshold, 1)
    }

    /// Adds `entries`; true for the one caller whose entries cross a multiple of the
    /// threshold, so concurrent requests release once per threshold entries, not each.
    func spend(_ entries: Int) -> Bool {
        guard entries > 0 else { return false }
        // Int64 entries served: centuries of requests before wrapping, and a wrap only moves one release.
        let (old, new) = served.wrappingAdd(entries, ordering: .relaxed)
        return new / threshold != old / threshold
    }
}

extension FileIndex {
    /// Records that a request read `entries` of this index's records (a listing, a lookup, an
    /// attribute reply) and releases its resident pages (``releaseResidentPages()``) each time
    /// the mount has served ``ResidentPageBudget/threshold`` entries since the last release.
    /// Returns whether this call released them.
    @discardableResult
    public func noteEntriesServed(_ entries: Int) -> Bool {
        guard residency.spend(entries) else { return false }
        releaseResidentPages()
        return true
    }
}
