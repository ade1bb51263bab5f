import ODRFSCore
import ODRFSFetch
import ODRFSStore

extension DownloadCoordinator {
    /// Records download progress and releases the progressive waiters whose bytes are
    /// now proven (retained here, under the lock, like at the end). Runs on the I/O
    /// thread that wrote the bytes, so the FUSE replies it triggers go out from there.
    func advance(_ pack: PackNumber, to progress: PackDownloader.Progress, tally: DownloadWireTally) {
        let index = Int(pack.rawValue)
        let now = table.clock()
        var crossedInUse = false
        var cause: MountMetrics.Cause?
        let ready = table.transaction { state -> [Waiter] in
            let ready = state.updateDownload(index) { download -> [Waiter] in
                cause = MountMetrics.Cause(download.priority)
                // A report from a range released ahead may carry older counts than the stream's last.
                download.bytesDone = max(download.bytesDone, progress.received.value)
                download.file = progress.file
                download.verifiedBytes = max(download.verifiedBytes, progress.verified.value)
                var ready: [Waiter] = []
                for (id, waiter) in download.waiters {
                    // Bytes verified in the prefix or released ahead of it (a chunk, a range).
                    guard waiter.isReady(in: progress.file) else { continue }
                    download.waiters.removeValue(forKey: id)
                    download.earlyReaders += 1
                    ready.append(waiter)
                }
                return ready
            } ?? []
            for waiter in ready where waiter.retains { crossedInUse = state.retain(index, at: now) || crossedInUse }
            return ready
        }
        if crossedInUse { reportInUseLimitCrossed(pack) }
        // Counted as the origin sent them (compressed), by the download's cause now.
        if let cause { table.metrics.recordFetched(tally.takeUnreported(), cause: cause) }
        for waiter in ready { waiter.resume(.success(progress.file)) }
        observers.changed(pack)
        table.events.publish(CacheEvent(.fetchProgress(table.manifest.pack(pack), received: progress.received.value)))
    }

    /// Counts `bytes` the origin sent for `pack` under its download's current cause.
    func recordFetched(_ bytes: Int64, of pack: PackNumber) {
        guard bytes > 0 else { return }
        let index = Int(pack.rawValue)
        let cause = table.read { state in state.slots[index].download.map { MountMetrics.Cause($0.priority) } }
        table.metrics.recordFetched(bytes, cause: cause ?? .open)
    }
}
