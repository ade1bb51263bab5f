import CoreMetrics

extension ResourceManager {
    /// Sets the gauges from one snapshot of the cache and the download queue; the metrics
    /// endpoint calls it before each scrape. Never blocks (free space is the figure last
    /// measured on the I/O executor).
    public func recordGauges() {
        let cache = cacheStatus()
        let (running, waiting) = coordinator.queue.occupancy
        let retained = table.read { state in state.slots.reduce(0) { $0 + ($1.retainCount > 0 ? 1 : 0) } }
        Gauge(label: MountMetrics.Name.downloadsInFlight).record(running)
        Gauge(label: MountMetrics.Name.downloadsQueued).record(waiting)
        // The metric's documented meaning is packs only; status's cachedBytes adds the pinned metadata.
        Gauge(label: MountMetrics.Name.cacheBytes).record(cache.cachedBytes - cache.metadataBytes)
        Gauge(label: MountMetrics.Name.cacheBudgetBytes).record(cache.limits.budget?.value ?? 0)
        if let available = cache.availableBytes {
            Gauge(label: MountMetrics.Name.diskFreeBytes).record(available)
        }
        Gauge(label: MountMetrics.Name.retainedPacks).record(retained)
    }
}
