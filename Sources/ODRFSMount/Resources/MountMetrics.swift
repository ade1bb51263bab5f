import CoreMetrics
import Foundation
import ODRFSFetch
import Synchronization

/// The mount's metrics, through swift-metrics: whatever backend the process bootstrapped
/// (`odrfs mount --metrics` bootstraps swift-prometheus; without it every handle is a
/// no-op). Names and labels are part of the contract and documented in the README.
///
/// Counters and timers are recorded where things happen (opens, downloads, evictions);
/// the gauges are set from a consistent snapshot when the endpoint is scraped
/// (``ResourceManager/recordGauges()``), so nothing is counted twice or drifts.
/// Handles are made once, at init: the backend must be bootstrapped before.
public final class MountMetrics: Sendable {
    /// The metric names (the contract).
    public enum Name {
        public static let openSeconds = "odrfs_open_seconds"
        public static let fetchedBytes = "odrfs_fetched_bytes_total"
        public static let fetchErrors = "odrfs_fetch_errors_total"
        public static let downloadsInFlight = "odrfs_downloads_in_flight"
        public static let downloadsQueued = "odrfs_downloads_queued"
        public static let cacheBytes = "odrfs_cache_bytes"
        public static let cacheBudgetBytes = "odrfs_cache_budget_bytes"
        public static let diskFreeBytes = "odrfs_disk_free_bytes"
        public static let evictions = "odrfs_evictions_total"
        public static let retainedPacks = "odrfs_retained_packs"
        public static let originRTT = "odrfs_origin_rtt_seconds"
    }

    /// What a download's bytes were fetched for (the `cause` label): a blocked open()
    /// (and the initial install, which is urgent too), a tag request, prefetch, or background
    /// work (updates).
    public enum Cause: String, Sendable, CaseIterable {
        case open, request, prefetch, update

        init(_ priority: DownloadPriority) {
            switch priority {
            case .urgent: self = .open
            case .request: self = .request
            case .prefetch: self = .prefetch
            case .background: self = .update
            }
        }
    }

    private let warmOpen = CoreMetrics.Timer(label: Name.openSeconds, dimensions: [("cache", "warm")])
    private let coldOpen = CoreMetrics.Timer(label: Name.openSeconds, dimensions: [("cache", "cold")])
    private let fetched: [Cause: Counter]
    private let evictions: [CacheEvent.EvictionReason: Counter]
    /// Time to first byte per origin, smoothed (weight 1/4 to the newest).
    private let roundTrips = Mutex<[String: Double]>([:])

    public init() {
        fetched = Dictionary(uniqueKeysWithValues: Cause.allCases.map {
            ($0, Counter(label: Name.fetchedBytes, dimensions: [("cause", $0.rawValue)]))
        })
        evictions = Dictionary(uniqueKeysWithValues: CacheEvent.EvictionReason.allCases.map {
            ($0, Counter(label: Name.evictions, dimensions: [("reason", $0.rawValue)]))
        })
    }

    /// An open() answered, `warm` if its pack was ready without waiting.
    func recordOpen(warm: Bool, since start: ContinuousClock.Instant) {
        (warm ? warmOpen : coldOpen).recordNanoseconds(Self.nanoseconds(ContinuousClock.now - start))
    }

    func recordFetched(_ bytes: Int64, cause: Cause) {
        guard bytes > 0 else { return }
        fetched[cause]?.increment(by: bytes)
    }

    func recordFetchError(_ kind: FetchError.Kind) {
        Counter(label: Name.fetchErrors, dimensions: [("kind", kind.eventName)]).increment()
    }

    func recordEviction(_ reason: CacheEvent.EvictionReason) {
        evictions[reason]?.increment()
    }

    /// The time from asking `origin` for a pack to its first bytes: the round trip as the
    /// mount sees it (request, server and network).
    func recordRoundTrip(origin: String, _ elapsed: Duration) {
        let seconds = Double(Self.nanoseconds(elapsed)) / 1e9
        let smoothed = roundTrips.withLock { trips in
            let value = trips[origin].map { $0 * 0.75 + seconds * 0.25 } ?? seconds
            trips[origin] = value
            return value
        }
        Gauge(label: Name.originRTT, dimensions: [("origin", origin)]).record(smoothed)
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : whole.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }
}
