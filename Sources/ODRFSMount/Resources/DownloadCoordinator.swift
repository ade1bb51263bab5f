import Foundation
import Logging
import ODRFSCore
import ODRFSFetch
import ODRFSRuntime
import ODRFSStore

/// What `join` did with a caller.
enum JoinOutcome {
    /// No wait needed: the pack is local (file nil) or the bytes needed already verified in `file`.
    /// The retain, if asked for, is taken.
    case ready(VerifiedFile?)
    /// Registered: `resume` will be called.
    case waiting
    /// Nothing is downloading the pack and the caller asked not to start one, or the
    /// caller asked not to wait (`registers: false`).
    case unavailable
}

/// Single-flight downloads: however many callers want a pack, one download runs and
/// the callers wait on it as *waiters*, resumed by callbacks from the thread that made
/// the progress (the I/O thread that wrote and verified the bytes, or the one the
/// finished download hands its end to; never the download's task). A waiter that is withdrawn (a FUSE interrupt) leaves alone; the last
/// one to leave a download no reader holds cancels it. At most `--max-downloads` run
/// at once (``DownloadQueue``); a blocked open() is urgent and jumps the queue.
///
/// Downloads live in the cache ledger's slots (so "local", "downloading" and retains
/// change atomically, in one ledger transaction); the ledger owns the reservation and
/// what a finished download makes local, the coordinator the waiters and the task.
final class DownloadCoordinator: Sendable {
    /// Someone waiting for a pack: an open(), a tag request, the initial install.
    /// `resume` is called exactly once, outside the lock. On success the retain (if
    /// `retains`) is already taken, and the file is the download's, with at least the bytes
    /// `needed` verified (nil: the pack is published; open it from the cache).
    struct Waiter {
        var retains: Bool
        /// Resume once these bytes of the pack are verified (progressive open: the file's first
        /// bytes, wherever they lie), instead of when the whole pack is published.
        var needed: Range<Int64>?
        /// Or once these are (a large file's last bytes, asked for at its open: whichever
        /// part of the file is proven first lets the open return; reads wait for their own bytes).
        var orElse: Range<Int64>? = nil
        var resume: @Sendable (Result<VerifiedFile?, FetchError>) -> Void

        /// Whether `file` holds what this waiter waits for (never, when it waits for the whole pack).
        func isReady(in file: VerifiedFile) -> Bool {
            Self.isReady(needed: needed, orElse: orElse, in: file)
        }

        static func isReady(needed: Range<Int64>?, orElse: Range<Int64>?, in file: VerifiedFile) -> Bool {
            guard let needed else { return false }
            return file.isVerified(needed) || orElse.map { file.isVerified($0) } == true
        }
    }

    /// A download in flight, kept in its pack's slot.
    struct Download {
        var waiters: [UInt64: Waiter] = [:]
        var bytesDone: Int64 = 0
        /// Leading bytes already written and proven by their chunk hashes.
        var verifiedBytes: Int64 = 0
        /// The file being written, with its own verified prefix; progressive readers read
        /// it (the same inode is published).
        var file: VerifiedFile?
        /// Readers that opened the pack before it was complete: the download must go on.
        var earlyReaders = 0
        var priority: DownloadPriority
        var ticket: UInt64
        /// Cancelled when the last waiter leaves: nobody wants the bytes any more.
        var task: Task<Void, Never>?
        /// Ranges readers wait for ahead of the stream, fetched by range alongside it.
        var demands = SpanDemands()
    }

    let table: CacheLedger
    let downloader: PackDownloader
    let purger: Purger
    let queue: DownloadQueue
    let observers: ProgressObservers
    let io: IOExecutor
    let logger: Logger
    /// Opens waiting for bytes: prefetch and background downloads pause while any do.
    let foreground = ForegroundGate()
    /// `--max-background-rate`, shared by every prefetch and background download.
    let backgroundRate: RateLimiter?
    /// The file index's chunks of a pack's large files (built on the I/O executor when its
    /// download starts): bytes are released a chunk at a time and ranges proven on their own.
    let chunkMap: @Sendable (PackNumber) -> PackChunkMap

    init(table: CacheLedger, downloader: PackDownloader, purger: Purger, maximumConcurrent: Int,
         observers: ProgressObservers, io: IOExecutor, logger: Logger, schedule: SchedulerSettings = SchedulerSettings(),
         chunkMap: @escaping @Sendable (PackNumber) -> PackChunkMap = { _ in .empty }) {
        self.chunkMap = chunkMap
        self.backgroundRate = schedule.maximumBackgroundRate.map { RateLimiter(bytesPerSecond: $0.value) }
        self.table = table
        self.downloader = downloader
        self.purger = purger
        self.queue = DownloadQueue(maximumConcurrent: maximumConcurrent)
        self.observers = observers
        self.io = io
        self.logger = logger
    }

    /// Logs a crossing of `--max-in-use` (outside the lock; opens are never refused for it).
    func reportInUseLimitCrossed(_ pack: PackNumber) {
        logger.warning("packs in use exceed the in-use limit; opens are still allowed", metadata: [
            "pack.id": "\(table.manifest.pack(pack).id)", "inUse.limit": "\(table.limits.maximumInUse.value)",
        ])
    }

    /// Async form of `join`: makes `pack` local (or the bytes `needed` verified),
    /// retaining it if asked. A cancelled task withdraws only its own wait; the download
    /// goes on for the others.
    @discardableResult
    func acquire(_ pack: PackNumber, retains: Bool, priority: DownloadPriority, needed: Range<Int64>? = nil,
                 startIfNeeded: Bool = true) async throws(FetchError) -> VerifiedFile? {
        let waiterID = VerifiedFile.makeWaiterID()
        let gate = OneShot<Result<VerifiedFile?, FetchError>>()
        let result: Result<VerifiedFile?, FetchError> = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<VerifiedFile?, FetchError>, Never>) in
                gate.arm(continuation)
                if Task.isCancelled {
                    gate.resolve(.failure(FetchError(.cancelled, "gave up waiting for pack '\(table.manifest.pack(pack).id)'")))
                    return
                }
                switch join(pack, retains: retains, priority: priority, needed: needed, startIfNeeded: startIfNeeded,
                            waiter: waiterID, resume: { gate.resolve($0) }) {
                case .ready(let file): gate.resolve(.success(file))
                case .waiting:
                    // The cancellation handler may have run before the waiter existed and
                    // found nothing; the flag was set before it ran, so look again.
                    if Task.isCancelled { cancelWaiter(waiterID, on: pack) }
                case .unavailable:
                    gate.resolve(.failure(FetchError(.corrupt, "pack '\(table.manifest.pack(pack).id)' is no longer being downloaded")))
                }
            }
        } onCancel: {
            cancelWaiter(waiterID, on: pack)
        }
        return try result.get()
    }

    /// Joins (or starts) the download of `pack`. Returns `.ready` when no wait is needed
    /// (the pack is local, or the bytes `needed`, or `orElse`, are verified in its download);
    /// otherwise `resume` is called exactly once later (or now, from this thread, if the
    /// pack became ready meanwhile). Withdraw with `cancelWaiter`.
    func join(
        _ pack: PackNumber, retains: Bool, priority: DownloadPriority, needed: Range<Int64>?, orElse: Range<Int64>? = nil,
        startIfNeeded: Bool, registers: Bool = true,
        waiter waiterID: UInt64, resume: @escaping @Sendable (Result<VerifiedFile?, FetchError>) -> Void
    ) -> JoinOutcome {
        let index = Int(pack.rawValue)
        let now = table.clock()
        enum Outcome { case ready(VerifiedFile?), unavailable, waiting, raise(UInt64), startDownload }
        var crossedInUse = false
        let outcome = table.transaction { state -> Outcome in
            if state.slots[index].isLocal {
                if retains { crossedInUse = state.retain(index, at: now) || crossedInUse }
                // Its kept descriptor, if any (`CacheLedger+KeptFiles.swift`); else the reader opens it.
                return .ready(state.keptFile(index))
            }
            if let download = state.slots[index].download, let file = download.file,
               Waiter.isReady(needed: needed, orElse: orElse, in: file) {
                // The bytes this reader needs are already proven in the file being written.
                state.updateDownload(index) { $0.earlyReaders += 1 }
                if retains { crossedInUse = state.retain(index, at: now) || crossedInUse }
                return .ready(file)
            }
            guard registers else { return .unavailable }
            if state.slots[index].download == nil && !startIfNeeded { return .unavailable }
            // An open (urgent) counts as waiting until resumed: background downloads step aside.
            let waiter = Waiter(retains: retains, needed: needed, orElse: orElse, resume: priority == .urgent ? foreground.track(resume) : resume)
            if state.slots[index].download == nil {
                // Reserve before starting, so concurrent downloads cannot overshoot together.
                state.reserve(index, for: Download(waiters: [waiterID: waiter], priority: priority, ticket: queue.makeTicket()))
                return .startDownload
            }
            return state.updateDownload(index) { download -> Outcome in
                download.waiters[waiterID] = waiter
                guard priority > download.priority else { return .waiting }
                download.priority = priority
                return .raise(download.ticket)
            } ?? .waiting
        }
        if crossedInUse { reportInUseLimitCrossed(pack) }
        switch outcome {
        case .ready(let file): return .ready(file)
        case .unavailable: return .unavailable
        case .waiting:
            if let needed { demand(needed, of: pack) }
            return .waiting
        case .raise(let ticket):
            queue.raise(ticket, to: priority)
            if let needed { demand(needed, of: pack) }
            return .waiting
        case .startDownload:
            startDownload(pack)
            if let needed { demand(needed, of: pack) }
            return .waiting
        }
    }

    /// How far ahead of the stream a range must lie to be fetched on its own: closer, the
    /// stream brings it about as soon (an extra request costs a round trip). A sequential
    /// read must lie further still, past the kernel's readahead window, which would otherwise
    /// fetch ahead every byte a sequential reader near the stream is about to get from it.
    func aheadOfStream(jumped: Bool) -> Int64 {
        table.manifest.chunkSize.value + (1 << 20) + (jumped ? 0 : 8 << 20)
    }

    /// Asks the download of `pack` for `range` ahead of its stream, when the stream is far
    /// from it and the bytes are not verified yet. A no-op when nothing downloads the pack.
    func demand(_ range: Range<Int64>, of pack: PackNumber, jumped: Bool = true, speculative: Bool = false) {
        let threshold = aheadOfStream(jumped: jumped)
        let demands = table.read { state -> SpanDemands? in
            guard let download = state.slots[Int(pack.rawValue)].download,
                  range.lowerBound >= download.bytesDone + threshold,
                  !(download.file?.isVerified(range) ?? false) else { return nil }
            return download.demands
        }
        demands?.request(range, speculative: speculative)
    }

    /// Withdraws a waiter (a FUSE interrupt, a cancelled task): it is resumed with
    /// `.cancelled` at once. The last waiter to leave a download that no reader holds
    /// cancels it.
    func cancelWaiter(_ waiterID: UInt64, on pack: PackNumber) {
        let (waiter, abandoned) = table.transaction { state -> (Waiter?, Task<Void, Never>?) in
            state.updateDownload(Int(pack.rawValue)) { download -> (Waiter?, Task<Void, Never>?) in
                let waiter = download.waiters.removeValue(forKey: waiterID)
                let abandoned = waiter != nil && download.waiters.isEmpty && download.earlyReaders == 0
                return (waiter, abandoned ? download.task : nil)
            } ?? (nil, nil)
        }
        // The download is cancelled before the waiter hears of it: whoever gave up finds the
        // abandonment already in effect (a test opening the origin right after saw it go on).
        if let abandoned {
            logger.info("download abandoned by its last waiter", metadata: ["pack.id": "\(table.manifest.pack(pack).id)"])
            abandoned.cancel()
        }
        waiter?.resume(.failure(FetchError(.cancelled, "gave up waiting for pack '\(table.manifest.pack(pack).id)'")))
    }

    private func startDownload(_ pack: PackNumber) {
        let descriptor = table.manifest.pack(pack)
        let index = Int(pack.rawValue)
        guard let (ticket, priority) = table.read({ state in
            state.slots[index].download.map { ($0.ticket, $0.priority) }
        }) else { return }
        logger.info("fetching pack", metadata: ["pack.id": "\(descriptor.id)", "pack.bytes": "\(descriptor.bytes.value)", "priority": "\(priority)"])
        // What the origin sent for this download, for `odrfs_fetched_bytes_total`.
        let tally = DownloadWireTally()
        // Detached: the download belongs to every waiter, not to the first one, so the
        // first waiter's cancellation must not cancel it (the last one's does).
        let task = Task.detached(priority: priority <= .prefetch ? .background : .userInitiated) { [self] in
            let started = ContinuousClock.now
            let result: Result<Void, FetchError>
            var adopted = false
            // Released on the I/O executor with the download's end (an unlink and a close).
            var heldClaim: DownloadClaim?
            do throws(FetchError) {
                do {
                    try await queue.acquire(ticket, priority: priority)
                } catch {
                    throw FetchError(.cancelled, "download of pack '\(descriptor.id)' abandoned before it started")
                }
                defer { queue.release(ticket) }
                // A cached copy waiting to be hashed again (after a lost index), or one another
                // mount of the store published, is a local fetch.
                // Hashed with a download slot held, so a burst of opens after a lost index
                // hashes no more packs at once than it would download.
                let (store, chunkSize) = (downloader.store, downloader.chunkSize)
                // In a store, another mount may have published it since this one started.
                // In the same hop, a store's claim on the download (one mount downloads a pack
                // at a time; the others wait for it): every hop queues behind the readers'.
                let first = await io.run { () -> (adopted: Bool, claim: PackStore.DownloadClaimOutcome) in
                    if store.hasVerifiedCopy(of: descriptor) || store.adoptUnverified(descriptor, chunkSize: chunkSize, now: Date()) != nil {
                        return (true, .unclaimed)
                    }
                    return (false, store.claimDownload(sha256: descriptor.sha256.hex))
                }
                adopted = first.adopted
                if !adopted {
                    let claimed = try await claimOrWaitForAnotherMount(descriptor, first: first.claim)
                    adopted = claimed.adopted
                    heldClaim = claimed.claim
                    if !adopted {
                        try await fetch(pack, descriptor, tally: tally, claim: claimed.claim)
                    }
                }
                result = .success(())
            } catch {
                result = .failure(error)
            }
            // The bytes after the last progress report (a pack's tail, a failed attempt's).
            recordFetched(tally.takeUnreported(), of: pack)
            // Finished on the I/O executor, never here on the cooperative pool: `complete()`
            // and the waiters' resumes send FUSE replies that splice pack bytes and open the
            // published pack (every pack smaller than a chunk is answered only here).
            let (duration, wasAdopted, claim) = (ContinuousClock.now - started, adopted, heldClaim)
            await io.run {
                claim?.release()
                self.finishDownload(pack, result: result, duration: duration, adopted: wasAdopted)
            }
        }
        table.transaction { state in
            state.updateDownload(index) { if $0.ticket == ticket { $0.task = task } }
        }
    }

    /// Downloads `pack` from the origin into the cache, with room made first. `claim`, this
    /// mount's claim on the download in a store, is touched as bytes arrive, so that the
    /// mounts waiting for it know it progresses.
    private func fetch(_ pack: PackNumber, _ descriptor: PackDescriptor, tally: DownloadWireTally,
                       claim: DownloadClaim?) async throws(FetchError) {
        try await io.run { () throws(FetchError) in try self.purger.makeRoom(for: pack) }
        table.events.publish(CacheEvent(.fetchStarted(descriptor)))
        let firstByte = FirstByteClock()
        let demands = table.read { state in state.slots[Int(pack.rawValue)].download?.demands }
        let chunkMap = await io.run { self.chunkMap(pack) }
        try await downloader.fetch(descriptor, pacing: pacing(for: pack), tally: tally, chunkMap: chunkMap, demands: demands) { progress in
            if let elapsed = firstByte.elapsedOnFirstCall() {
                self.table.metrics.recordRoundTrip(origin: self.downloader.origin.displayName, elapsed)
            }
            claim?.touch()   // on the I/O thread, as every progress call
            self.advance(pack, to: progress, tally: tally)
        }
    }

    /// How long a download claimed by another mount of the store may go without progress
    /// before this mount downloads the pack too (that mount is stopped or wedged; its own
    /// fetch timeout would have ended a download that merely stalls).
    static let anotherMountsStallLimit: TimeInterval = 30

    /// In a store: claims the download of `descriptor` for this mount, or waits (polling
    /// every 100 ms, the task sleeping) while another mount downloads it, until that pack is
    /// in the store (`adopted`), the claim is free (this mount claims it), or the other
    /// download stops progressing. A private cache claims nothing and waits for nothing.
    /// `first`: the claim's outcome the caller already asked for (in the hop that looked
    /// for a local copy).
    private func claimOrWaitForAnotherMount(_ descriptor: PackDescriptor,
                                            first: PackStore.DownloadClaimOutcome) async throws(FetchError) -> (claim: DownloadClaim?, adopted: Bool) {
        let store = downloader.store
        let hash = descriptor.sha256.hex
        var waiting = false
        var next: PackStore.DownloadClaimOutcome? = first
        while true {
            // After a wait, the claim is free because the other mount finished: look for its
            // copy before downloading (one hop for both).
            let outcome: (claim: PackStore.DownloadClaimOutcome, published: Bool)
            if let given = next {
                outcome = (given, false)
                next = nil
            } else {
                outcome = await io.run { () -> (claim: PackStore.DownloadClaimOutcome, published: Bool) in
                    let outcome = store.claimDownload(sha256: hash)
                    if case .claimed(let claim) = outcome, store.hasVerifiedCopy(of: descriptor) {
                        claim.release()
                        return (outcome, true)
                    }
                    return (outcome, false)
                }
            }
            if outcome.published { return (nil, true) }
            switch outcome.claim {
            case .unclaimed:
                return (nil, false)
            case .claimed(let claim):
                return (claim, false)
            case .busy(let lastProgress):
                if !waiting {
                    waiting = true
                    logger.info("another mount of the store is downloading this pack; waiting for it", metadata: ["pack.id": "\(descriptor.id)"])
                }
                if Date().timeIntervalSince(lastProgress) > Self.anotherMountsStallLimit {
                    logger.warning("another mount's download of this pack makes no progress; downloading it here too", metadata: [
                        "pack.id": "\(descriptor.id)", "stalled.seconds": "\(Int(Date().timeIntervalSince(lastProgress)))",
                    ])
                    return (nil, false)
                }
                do {
                    try await Task.sleep(for: .milliseconds(100))
                } catch {
                    throw FetchError(.cancelled, "wait for another mount's download of pack '\(descriptor.id)' abandoned")
                }
                if await io.run({ store.hasVerifiedCopy(of: descriptor) }) { return (nil, true) }
            }
        }
    }

    /// `adopted`: the pack came from its cached copy in `unverified/`, not from the origin
    /// (not counted as a fetch, no fetch event).
    private func finishDownload(_ pack: PackNumber, result: Result<Void, FetchError>, duration: Duration, adopted: Bool = false) {
        let index = Int(pack.rawValue)
        if !adopted { purger.releaseStoreReservation(table.manifest.pack(pack)) }
        let now = table.clock()
        enum Next { case finished([Waiter], VerifiedFile?, dropped: VerifiedFile?), restart(VerifiedFile?) }
        var crossedInUse = false
        let published: Bool
        if case .success = result { published = true } else { published = false }
        let next = table.transaction { state -> Next in
            let waiters = Array(state.slots[index].download?.waiters.values ?? [:].values)
            if case .failure(let error) = result, error.kind == .cancelled, !waiters.isEmpty {
                // Callers joined after the last one left and the download was cancelled:
                // start over for them, in a new file with its own verified prefix.
                let abandoned = state.updateDownload(index) { download -> VerifiedFile? in
                    defer { download = Download(waiters: download.waiters, priority: download.priority, ticket: queue.makeTicket()) }
                    return download.file
                } ?? nil
                return .restart(abandoned)
            }
            // The reservation ends; published, the pack is local and its file kept for readers.
            let (download, dropped) = state.settleDownload(index, published: published, fetched: !adopted)
            if published {
                for waiter in waiters where waiter.retains {
                    crossedInUse = state.retain(index, at: now) || crossedInUse
                }
            }
            return .finished(waiters, download?.file, dropped: dropped)
        }
        defer { observers.changed(pack) }
        if crossedInUse { reportInUseLimitCrossed(pack) }
        guard case .finished(let waiters, let file, _) = next else {
            if case .restart(let abandoned) = next { abandoned?.fail("the download was abandoned and started over") }
            startDownload(pack)
            return
        }
        let descriptor = table.manifest.pack(pack)
        switch result {
        case .success:
            // Recorded as local first, then the last bytes are let through.
            file?.complete()
            if !adopted {
                logger.info("fetched pack", metadata: [
                    "pack.id": "\(descriptor.id)", "pack.bytes": "\(descriptor.bytes.value)",
                    "waiters": "\(waiters.count)", "duration": "\(duration)",
                ])
            }
            for waiter in waiters { waiter.resume(.success(file)) }
            if !adopted { table.events.publish(CacheEvent(.fetchFinished(descriptor))) }
            // The new pack may have pushed the cache over its limits.
            purger.wake(.afterDownload)
        case .failure(let error):
            // Readers of this file keep the bytes verified so far and nothing more.
            file?.fail("\(error)")
            // Origin unreachable: each waiter (an open, prefetch) says so itself, and the probe
            // logs the mount going offline once; one line per failed open, not two.
            logger.log(level: error.kind == .unreachable ? .debug : .error, "pack fetch failed",
                       metadata: ["pack.id": "\(descriptor.id)", "error": "\(error)", "waiters": "\(waiters.count)"])
            for waiter in waiters { waiter.resume(.failure(error)) }
            table.events.publish(CacheEvent(.fetchFailed(descriptor, error)))
            if error.kind != .cancelled { table.metrics.recordFetchError(error.kind) }
        }
    }
}
