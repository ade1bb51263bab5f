import Foundation
import ODRFSCore
import ODRFSFetch

/// One thing the mount's cache did, as its owners report it: a fetch starting,
/// progressing, finishing or failing (``DownloadCoordinator``), a pack retained or
/// released (``CacheLedger``), evicted (``Purger``), or free space running low.
///
/// A Mount type in the Mount's terms (pack descriptors, fetch errors, eviction reasons):
/// the resources layer knows nothing of the control plane. Its wire form, the line
/// `odrfs events` prints and the value `BundleResourceRequest` subscribers receive, is
/// made in one place on the control side (`MountControlService+Events.swift`).
public struct CacheEvent: Sendable {
    /// What happened.
    public enum What: Sendable {
        /// A download left the queue and started.
        case fetchStarted(PackDescriptor)
        /// Bytes of a download arrived: `received` of the pack's bytes so far.
        case fetchProgress(PackDescriptor, received: Int64)
        /// A download was verified and published.
        case fetchFinished(PackDescriptor)
        /// A download failed (or was abandoned: `.cancelled`).
        case fetchFailed(PackDescriptor, FetchError)
        /// A pack was deleted from the cache.
        case evicted(Eviction)
        /// A pack went into use (its first retain).
        case retained(PackDescriptor)
        /// A pack's last retain ended.
        case released(PackDescriptor)
        /// Free space on the cache's filesystem fell below `--min-free`: this many bytes are free.
        case lowDiskSpace(availableBytes: Int64)
    }

    /// Why a pack was evicted. The raw values are the `reason` label of
    /// `odrfs_evictions_total` (and, through the control plane, of `evicted` events).
    public enum EvictionReason: String, Sendable, CaseIterable {
        /// The cache was over `--cache-size`.
        case cacheSize = "cache-size"
        /// The cache's filesystem had less than `--min-free` available (or not even room
        /// for the pack being fetched).
        case minFree = "min-free"
        /// `odrfs purge` or `BundleResourceRequest` asked for it.
        case manual
        /// A new bundle revision no longer needs the pack.
        case update
    }

    /// A pack the purger deleted, why, and by which rule of the eviction order.
    public struct Eviction: Sendable {
        /// The pack's id, or for a pack of an older bundle version its id and "(older bundle version)".
        public var pack: String
        /// The pack's tags (none for a pack of an older bundle version).
        public var tags: [Tag]
        /// The pack's bytes plus its backing files'.
        public var bytes: Int64
        /// Why it had to go.
        public var reason: EvictionReason
        /// The rule that chose it.
        public var rule: String
    }

    /// When it happened (when the event was made: publishers make it as it happens).
    public let time: Date
    /// What happened, with what it happened to.
    public let what: What

    public init(_ what: What, time: Date = Date()) {
        self.time = time
        self.what = what
    }
}

extension FetchError.Kind {
    /// The kebab-case name used as the reason of failed fetches and the `kind` label of
    /// `odrfs_fetch_errors_total`.
    public var eventName: String {
        switch self {
        case .invalidOrigin: "invalid-origin"
        case .unsupported: "unsupported"
        case .unreachable: "unreachable"
        case .notFound: "not-found"
        case .unauthorized: "unauthorized"
        case .corrupt: "corrupt"
        case .noSpace: "no-space"
        case .localIO: "local-io"
        case .readOnlyCache: "read-only-cache"
        case .tooManyOpenFiles: "too-many-open-files"
        case .cancelled: "cancelled"
        }
    }
}

extension PurgeReason {
    /// The reason reported for packs this purge evicts: `odrfs purge` is manual, a pack
    /// that does not fit on disk is min-free, and pressure is cache-size when the cache
    /// was over its byte budget, else min-free.
    func evictionReason(overBudget: Bool) -> CacheEvent.EvictionReason {
        switch self {
        case .requested: .manual
        case .diskFull: .minFree
        case .afterDownload, .afterRelease, .periodicCheck, .makingRoom, .manual: overBudget ? .cacheSize : .minFree
        }
    }
}
