import Foundation
import Logging
import ODRFSCore
import ODRFSFetch
import ODRFSStore

/// What `join` did with a caller.
enum JoinOutcome {
    /// No wait needed: the pack is local (file nil) or its prefix already verified in `file`.
    /// The retain, if asked for, is taken.
    case ready(VerifiedFile?)
    /// Registered: `resume` will be called.
    case waiting
    /// Nothing is downloading the pack and the caller asked not to start one, or the
    /// caller asked not to wait (`registers: false`).
    case unavailable
}

extension ResourceManager {
    /// Async form of `join`: makes `pack` local (or its first `prefix` bytes verified),
    /// retaining it if asked. A cancelled task withdraws only its own wait; the download
    /// goes on for the others.
    @discardableResult
    func acquire(_ pack: PackNumber, retains: Bool, priority: DownloadPriority, prefix: Int64? = nil,
                 startIfNeeded: Bool = true) async throws(FetchError) -> VerifiedFile? {
        let waiterID = VerifiedFile.makeWaiterID()
        let gate = ResumeGate()
        let result: Result<VerifiedFile?, FetchError> = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<VerifiedFile?, FetchError>, Never>) in
                gate.arm(continuation)
                if Task.isCancelled {
                    gate.resume(.failure(FetchError(.cancelled, "gave up waiting for pack '\(manifest.pack(pack).id)'")))
                    return
                }
                switch join(pack, retains: retains, priority: priority, prefix: prefix, startIfNeeded: startIfNeeded,
                            waiter: waiterID, resume: { gate.resume($0) }) {
                case .ready(let file): gate.resume(.success(file))
                case .waiting:
                    // The cancellation handler may have run before the waiter existed and
                    // found nothing; the flag was set before it ran, so look again.
                    if Task.isCancelled { cancelWaiter(waiterID, on: pack) }
                case .unavailable:
                    gate.resume(.failure(FetchError(.corrupt, "pack '\(manifest.pack(pack).id)' is no longer being downloaded")))
                }
            }
        } onCancel: {
            cancelWaiter(waiterID, on: pack)
        }
        return try result.get()
    }

    /// Joins (or starts) the download of `pack`. Returns `.ready` when no wait is needed;
    /// otherwise `resume` is called exactly once later (or now, from this thread, if the
    /// pack became ready meanwhile). Withdraw with `cancelWaiter`.
    func join(
        _ pack: PackNumber, retains: Bool, priority: DownloadPriority, prefix: Int64?, startIfNeeded: Bool,
        registers: Bool = true,
        waiter waiterID: UInt64, resume: @escaping @Sendable (Result<VerifiedFile?, FetchError>) -> Void
    ) -> JoinOutcome {
        let index = Int(pack.rawValue)
        let now = clock()
        enum Outcome { case ready(VerifiedFile?), unavailable, waiting, raise(UInt64), startDownload }
        let outcome = withState { state -> Outcome in
            if state.slots[index].isLocal {
                if retains { retain(index, in: &state, at: now) }
                return .ready(nil)
            }
            if let prefix, let download = state.slots[index].download, let file = download.file, download.verifiedBytes >= prefix {
                // The bytes this reader needs are already proven in the file being written.
                state.slots[index].download?.earlyReaders += 1
                if retains { retain(index, in: &state, at: now) }
                return .ready(file)
            }
            guard registers else { return .unavailable }
            let waiter = Waiter(retains: retains, prefix: prefix, resume: resume)
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
        case .ready(let file): return .ready(file)
        case .unavailable: return .unavailable
        case .waiting: return .waiting
        case .raise(let ticket):
            downloads.raise(ticket, to: priority)
            return .waiting
        case .startDownload:
            startDownload(pack)
            return .waiting
        }
    }

    /// Withdraws a waiter (a FUSE interrupt, a cancelled task): it is resumed with
    /// `.cancelled` at once. The last waiter to leave a download that no reader holds
    /// cancels it.
    func cancelWaiter(_ waiterID: UInt64, on pack: PackNumber) {
        let (waiter, abandoned) = withState { state -> (Waiter?, Task<Void, Never>?) in
            let index = Int(pack.rawValue)
            let waiter = state.slots[index].download?.waiters.removeValue(forKey: waiterID)
            let abandoned = waiter != nil && state.slots[index].download?.waiters.isEmpty == true
                && state.slots[index].download?.earlyReaders == 0
            return (waiter, abandoned ? state.slots[index].download?.task : nil)
        }
        waiter?.resume(.failure(FetchError(.cancelled, "gave up waiting for pack '\(manifest.pack(pack).id)'")))
        if let abandoned {
            logger.info("download abandoned by its last waiter", metadata: ["pack.id": "\(manifest.pack(pack).id)"])
            abandoned.cancel()
        }
    }

    private func startDownload(_ pack: PackNumber) {
        let descriptor = manifest.pack(pack)
        let index = Int(pack.rawValue)
        guard let (ticket, priority) = withState({ state in
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
                try await io.run { () throws(FetchError) in try self.makeRoom(for: pack) }
                try await downloader.fetch(descriptor) { progress in
                    self.advance(pack, to: progress)
                }
                result = .success(())
            } catch {
                result = .failure(error)
            }
            finishDownload(pack, result: result, duration: ContinuousClock.now - started)
        }
        withState { state in
            if state.slots[index].download?.ticket == ticket { state.slots[index].download?.task = task }
        }
    }

    /// Records download progress and releases the progressive waiters whose bytes are
    /// now proven (retained here, under the lock, like at the end). Runs on the I/O
    /// thread that wrote the bytes, so the FUSE replies it triggers go out from there.
    private func advance(_ pack: PackNumber, to progress: PackDownloader.Progress) {
        let index = Int(pack.rawValue)
        let now = clock()
        let ready = withState { state -> [Waiter] in
            guard state.slots[index].download != nil else { return [] }
            state.slots[index].download!.bytesDone = progress.received.value
            state.slots[index].download!.file = progress.file
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
        for waiter in ready { waiter.resume(.success(progress.file)) }
        progressObservers.changed(pack)
    }

    private func finishDownload(_ pack: PackNumber, result: Result<Void, FetchError>, duration: Duration) {
        let index = Int(pack.rawValue)
        let now = clock()
        enum Next { case finished([Waiter], VerifiedFile?), restart(VerifiedFile?) }
        let next = withState { state -> Next in
            let waiters = Array(state.slots[index].download?.waiters.values ?? [:].values)
            let file = state.slots[index].download?.file
            if case .failure(let error) = result, error.kind == .cancelled, !waiters.isEmpty {
                // Callers joined after the last one left and the download was cancelled:
                // start over for them, in a new file with its own verified prefix.
                let abandoned = state.slots[index].download?.file
                state.slots[index].download?.ticket = downloads.makeTicket()
                state.slots[index].download?.task = nil
                state.slots[index].download?.bytesDone = 0
                state.slots[index].download?.verifiedBytes = 0
                state.slots[index].download?.file = nil
                state.slots[index].download?.earlyReaders = 0
                return .restart(abandoned)
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
            return .finished(waiters, file)
        }
        defer { progressObservers.changed(pack) }
        guard case .finished(let waiters, let file) = next else {
            if case .restart(let abandoned) = next { abandoned?.fail("the download was abandoned and started over") }
            startDownload(pack)
            return
        }
        let descriptor = manifest.pack(pack)
        switch result {
        case .success:
            // Recorded as local first, then the last bytes are let through.
            file?.complete()
            logger.info("fetched pack", metadata: [
                "pack.id": "\(descriptor.id)", "pack.bytes": "\(descriptor.bytes.value)",
                "waiters": "\(waiters.count)", "duration": "\(duration)",
            ])
            for waiter in waiters { waiter.resume(.success(file)) }
            // The new pack may have pushed the cache over its limits.
            purgerWakeups.yield(.afterDownload)
        case .failure(let error):
            // Readers of this file keep the bytes verified so far and nothing more.
            file?.fail("\(error)")
            logger.error("pack fetch failed", metadata: ["pack.id": "\(descriptor.id)", "error": "\(error)", "waiters": "\(waiters.count)"])
            for waiter in waiters { waiter.resume(.failure(error)) }
        }
    }
}
