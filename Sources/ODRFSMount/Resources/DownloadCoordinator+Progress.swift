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
        let ready = table.withState { state -> [Waiter] in
            guard state.slots[index].download != nil else { return [] }
            cause = MountMetrics.Cause(state.slots[index].download!.priority)
            state.slots[index].download!.bytesDone = progress.received.value
            state.slots[index].download!.file = progress.file
            guard progress.verified.value > state.slots[index].download!.verifiedBytes else { return [] }
            state.slots[index].download!.verifiedBytes = progress.verified.value
            var ready: [Waiter] = []
            for (id, waiter) in state.slots[index].download!.waiters {
                guard let prefix = waiter.prefix, prefix <= progress.verified.value else { continue }
                state.slots[index].download!.waiters.removeValue(forKey: id)
                state.slots[index].download!.earlyReaders += 1
                if waiter.retains { crossedInUse = table.retain(index, in: &state, at: now) || crossedInUse }
                ready.append(waiter)
            }
            return ready
        }
        if crossedInUse { reportInUseLimitCrossed(pack) }
        // Counted as the origin sent them (compressed), by the download's cause now.
        if let cause { table.metrics.recordFetched(tally.takeUnreported(), cause: cause) }
        for waiter in ready { waiter.resume(.success(progress.file)) }
        observers.changed(pack)
        table.events.publish(.fetchProgress(table.manifest.pack(pack), received: progress.received.value))
    }

    /// Counts `bytes` the origin sent for `pack` under its download's current cause.
    func recordFetched(_ bytes: Int64, of pack: PackNumber) {
        guard bytes > 0 else { return }
        let index = Int(pack.rawValue)
        let cause = table.withState { state in state.slots[index].download.map { MountMetrics.Cause($0.priority) } }
        table.metrics.recordFetched(bytes, cause: cause ?? .open)
    }
}
