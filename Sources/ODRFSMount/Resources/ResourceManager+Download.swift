import Foundation
import Logging
import ODRFSCore
import ODRFSFetch

extension ResourceManager {
    /// Joins (or starts) the download of `pack` as a cancellable waiter.
    func acquire(_ pack: PackNumber, retains: Bool, priority: DownloadPriority, prefix: Int64? = nil, startIfNeeded: Bool = true) async throws(FetchError) {
        let index = Int(pack.rawValue)
        let now = clock()
        // Fast path: no continuation, no task.
        let wasLocal = state.withLock { state -> Bool in
            guard state.slots[index].isLocal else { return false }
            if retains { retain(index, in: &state, at: now) }
            return true
        }
        if wasLocal { return }

        let waiterID = state.withLock { state -> UInt64 in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        do {
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    register(waiterID, on: pack, retains: retains, priority: priority, prefix: prefix, startIfNeeded: startIfNeeded, continuation: continuation)
                }
            } onCancel: {
                cancelWaiter(waiterID, on: pack)
            }
        } catch let error as FetchError {
            throw error
        } catch {
            throw FetchError(.cancelled, "gave up waiting for pack '\(manifest.pack(pack).id)'")
        }
    }

    private func register(
        _ waiterID: UInt64, on pack: PackNumber, retains: Bool, priority: DownloadPriority,
        prefix: Int64?, startIfNeeded: Bool, continuation: CheckedContinuation<Void, any Error>
    ) {
        let index = Int(pack.rawValue)
        let now = clock()
        enum Outcome { case resumeNow, resumeCancelled, unavailable, waiting, raise(UInt64), startDownload }
        let outcome = state.withLock { state -> Outcome in
            if state.slots[index].isLocal {
                // Became local between the fast path and now.
                if retains { retain(index, in: &state, at: now) }
                return .resumeNow
            }
            // The cancellation handler may have run before we registered; it found
            // nothing to cancel, so honour it here (same lock, flag set before handler).
            if Task.isCancelled { return .resumeCancelled }
            if let prefix, let download = state.slots[index].download, download.verifiedBytes >= prefix {
                // The bytes this reader needs are already proven.
                state.slots[index].download?.earlyReaders += 1
                if retains { retain(index, in: &state, at: now) }
                return .resumeNow
            }
            let waiter = Waiter(continuation: continuation, retains: retains, prefix: prefix)
            if state.slots[index].download == nil {
                guard startIfNeeded else { return .unavailable }
                state.slots[index].download = Download(waiters: [waiterID: waiter], priority: priority, ticket: downloads.makeTicket())
                // Reserve before starting, so concurrent downloads cannot overshoot together.
                state.reservedBytes += manifest.pack(pack).bytes.value
                return .startDownload
            }
            state.slots[index].download!.waiters[waiterID] = waiter
            if priority > state.slots[index].download!.priority {
                state.slots[index].download!.priority = priority
                return .raise(state.slots[index].download!.ticket)
            }
            return .waiting
        }
        switch outcome {
        case .resumeNow:
            continuation.resume()
        case .resumeCancelled:
            continuation.resume(throwing: CancellationError())
        case .unavailable:
            continuation.resume(throwing: FetchError(.corrupt, "pack '\(manifest.pack(pack).id)' is no longer being downloaded"))
        case .waiting:
            break
        case .raise(let ticket):
            downloads.raise(ticket, to: priority)
        case .startDownload:
            startDownload(pack)
        }
    }

    private func cancelWaiter(_ waiterID: UInt64, on pack: PackNumber) {
        let (waiter, abandoned) = state.withLock { state -> (Waiter?, Task<Void, Never>?) in
            let index = Int(pack.rawValue)
            let waiter = state.slots[index].download?.waiters.removeValue(forKey: waiterID)
            let abandoned = waiter != nil && state.slots[index].download?.waiters.isEmpty == true
                && state.slots[index].download?.earlyReaders == 0
            return (waiter, abandoned ? state.slots[index].download?.task : nil)
        }
        waiter?.continuation.resume(throwing: CancellationError())
        if let abandoned {
            logger.info("download abandoned by its last waiter", metadata: ["pack.id": "\(manifest.pack(pack).id)"])
            abandoned.cancel()
        }
    }

    private func startDownload(_ pack: PackNumber) {
        let descriptor = manifest.pack(pack)
        let index = Int(pack.rawValue)
        guard let (ticket, priority) = state.withLock({ state in
            state.slots[index].download.map { ($0.ticket, $0.priority) }
        }) else { return }
        logger.info("fetching pack", metadata: ["pack.id": "\(descriptor.id)", "pack.bytes": "\(descriptor.bytes.value)", "priority": "\(priority)"])
        // Detached: the download belongs to every waiter, not to the first one, so the
        // first waiter's cancellation must not cancel it (the last one's does).
        let task = Task.detached(priority: priority == .prefetch ? .background : .userInitiated) { [self] in
            let started = ContinuousClock.now
            let result: Result<Void, FetchError>
            do throws(FetchError) {
                do {
                    try await downloads.acquire(ticket, priority: priority)
                } catch {
                    throw FetchError(.cancelled, "download of pack '\(descriptor.id)' abandoned before it started")
                }
                defer { downloads.release(ticket) }
                try makeRoom(for: pack)
                try await downloader.fetch(descriptor) { progress in
                    self.advance(pack, to: progress)
                }
                result = .success(())
            } catch {
                result = .failure(error)
            }
            finishDownload(pack, result: result, duration: ContinuousClock.now - started)
        }
        state.withLock { state in
            if state.slots[index].download?.ticket == ticket { state.slots[index].download?.task = task }
        }
    }

    /// Records download progress and releases the progressive waiters whose bytes are
    /// now proven (they are retained here, under the lock, like at the end).
    private func advance(_ pack: PackNumber, to progress: PackDownloader.Progress) {
        let index = Int(pack.rawValue)
        let now = clock()
        let ready = state.withLock { state -> [Waiter] in
            guard state.slots[index].download != nil else { return [] }
            state.slots[index].download!.bytesDone = progress.received.value
            state.slots[index].download!.temporaryPath = progress.temporaryPath
            guard progress.verified.value > state.slots[index].download!.verifiedBytes else { return [] }
            state.slots[index].download!.verifiedBytes = progress.verified.value
            var ready: [Waiter] = []
            for (id, waiter) in state.slots[index].download!.waiters {
                guard let prefix = waiter.prefix, prefix <= progress.verified.value else { continue }
                state.slots[index].download!.waiters.removeValue(forKey: id)
                state.slots[index].download!.earlyReaders += 1
                if waiter.retains { retain(index, in: &state, at: now) }
                ready.append(waiter)
            }
            return ready
        }
        ready.forEach { $0.continuation.resume() }
    }

    private func finishDownload(_ pack: PackNumber, result: Result<Void, FetchError>, duration: Duration) {
        let index = Int(pack.rawValue)
        let now = clock()
        enum Next { case finished([Waiter]), restart }
        let next = state.withLock { state -> Next in
            let waiters = Array(state.slots[index].download?.waiters.values ?? [:].values)
            if case .failure(let error) = result, error.kind == .cancelled, !waiters.isEmpty {
                // Callers joined after the last one left and the download was cancelled: start over for them.
                state.slots[index].download?.ticket = downloads.makeTicket()
                state.slots[index].download?.task = nil
                state.slots[index].download?.bytesDone = 0
                return .restart
            }
            state.slots[index].download = nil
            state.reservedBytes -= manifest.pack(pack).bytes.value
            if case .success = result {
                state.slots[index].isLocal = true
                state.slots[index].fetchCount += 1
                state.cachedBytes += manifest.pack(pack).bytes.value
                for waiter in waiters where waiter.retains {
                    retain(index, in: &state, at: now)
                }
            }
            return .finished(waiters)
        }
        guard case .finished(let waiters) = next else {
            startDownload(pack)
            return
        }
        let descriptor = manifest.pack(pack)
        switch result {
        case .success:
            logger.info("fetched pack", metadata: [
                "pack.id": "\(descriptor.id)", "pack.bytes": "\(descriptor.bytes.value)",
                "waiters": "\(waiters.count)", "duration": "\(duration)",
            ])
            for waiter in waiters { waiter.continuation.resume() }
            // The new pack may have pushed the cache over its limits.
            purgerWakeups.yield("download")
        case .failure(let error):
            logger.error("pack fetch failed", metadata: ["pack.id": "\(descriptor.id)", "error": "\(error)", "waiters": "\(waiters.count)"])
            for waiter in waiters { waiter.continuation.resume(throwing: error) }
        }
    }
}
