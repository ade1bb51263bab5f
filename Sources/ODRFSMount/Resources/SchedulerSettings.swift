import ODRFSCore

/// How downloads of different classes share the link: `--max-background-rate` and
/// `--prefetch-delay`. The classes themselves (open > request > prefetch > background) are
/// ``DownloadPriority``'s order.
public struct SchedulerSettings: Sendable, Codable, Equatable {
    /// Bytes per second for prefetch and background downloads together; nil: no cap.
    public var maximumBackgroundRate: ByteCount?
    /// How long no open may have waited before prefetch starts after the mount is ready.
    public var prefetchDelay: Duration?

    public init(maximumBackgroundRate: ByteCount? = nil, prefetchDelay: Duration? = nil) {
        self.maximumBackgroundRate = maximumBackgroundRate
        self.prefetchDelay = prefetchDelay
    }
}
