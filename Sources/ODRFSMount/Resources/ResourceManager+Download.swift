import Foundation
import Logging
import ODRFSCore
import ODRFSFetch

extension ResourceManager {
    /// Joins (or starts) the download of `pack` as a cancellable waiter.
    func acquire(_ pack: PackNumber, retains: Bool) async throws(FetchError) {
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
                    register(waiterID, on: pack, retains: retains, continuation: continuation)
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

    private func register(_ waiterID: UInt64, on pack: PackNumber, retains: Bool, continuation: CheckedContinuation<Void, any Error>) {
        let index = Int(pack.rawValue)
        let now = clock()
        enum Outcome { case resumeNow, resumeCancelled, waiting, startDownload }
        let outcome = state.withLock { state -> Outcome in
            if state.slots[index].isLocal {
                // Became local between the fast path and now.
                if retains { retain(index, in: &state, at: now) }
                return .resumeNow
            }
            // The cancellation handler may have run before we registered; it found
            // nothing to cancel, so honour it here (same lock, flag set before handler).
            if Task.isCancelled { return .resumeCancelled }
            let waiter = Waiter(continuation: continuation, retains: retains)
            if state.slots[index].download == nil {
                state.slots[index].download = Download(waiters: [waiterID: waiter])
                // Reserve before starting, so concurrent downloads cannot overshoot together.
                state.reservedBytes += manifest.pack(pack).bytes.value
                return .startDownload
            }
            state.slots[index].download!.waiters[waiterID] = waiter
            return .waiting
        }
        switch outcome {
        case .resumeNow:
            continuation.resume()
        case .resumeCancelled:
            continuation.resume(throwing: CancellationError())
        case .waiting:
            break
        case .startDownload:
            startDownload(pack)
        }
    }

    private func cancelWaiter(_ waiterID: UInt64, on pack: PackNumber) {
        let waiter = state.withLock { state in
            state.slots[Int(pack.rawValue)].download?.waiters.removeValue(forKey: waiterID)
        }
        waiter?.continuation.resume(throwing: CancellationError())
    }

    private func startDownload(_ pack: PackNumber) {
        let descriptor = manifest.pack(pack)
        logger.info("fetching pack", metadata: ["pack.id": "\(descriptor.id)", "pack.bytes": "\(descriptor.bytes.value)"])
        // Detached: the download belongs to every waiter, not to the first one, so the
        // first waiter's cancellation must not cancel it.
        Task.detached(priority: .userInitiated) { [self] in
            let started = ContinuousClock.now
            let result: Result<Void, FetchError>
            do throws(FetchError) {
                try makeRoom(for: pack)
                try await downloader.fetch(descriptor) { done in
                    self.state.withLock { $0.slots[Int(pack.rawValue)].download?.bytesDone = done.value }
                }
                result = .success(())
            } catch {
                result = .failure(error)
            }
            finishDownload(pack, result: result, duration: ContinuousClock.now - started)
        }
    }

    private func finishDownload(_ pack: PackNumber, result: Result<Void, FetchError>, duration: Duration) {
        let index = Int(pack.rawValue)
        let now = clock()
        let waiters = state.withLock { state -> [Waiter] in
            let waiters = Array(state.slots[index].download?.waiters.values ?? [:].values)
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
            return waiters
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
