import ODRFSCore
import ODRFSFetch
import Synchronization

/// Bounds the fetch phase of an update the way one fetch is bounded: when the update has
/// gone the fetch timeout without progress — bytes arriving at the low-speed limit or
/// faster (``ProgressMark``), or a pack published — the phase is cancelled and the update
/// fails, saying so, with the mount left on its revision. Each fetch bounds itself too, but
/// an update is many of them, in turn, from every server: without this, a mirror that
/// corrupts every pack and an origin that resets every request kept `odrfs update` going
/// for minutes.
///
/// Bytes reach it per buffer: from span downloads through ``credit(_:)``, from whole-pack
/// downloads through ``tally`` (read by the watch every 250 ms).
///
/// Thread safety: the mark is a `Mutex`, credited from any fetch's callbacks.
final class UpdateProgressWatchdog: Sendable {
    private let mark: Mutex<ProgressMark>
    let limit: Duration
    /// Given to whole-pack downloads: every byte they receive.
    let tally = DownloadWireTally()

    init(limit: Duration, lowSpeedLimit: ByteCount) {
        self.limit = limit
        self.mark = Mutex(ProgressMark(lowSpeedLimit: lowSpeedLimit))
    }

    /// `bytes` arrived.
    func credit(_ bytes: Int64) {
        mark.withLock { $0.credit(bytes) }
    }

    /// A pack is done: the update moved forward, whatever its speed.
    func advance() {
        mark.withLock { $0.credit(.max) }
    }

    /// Runs `body`; cancels it and throws `failure` once `limit` passes without ``advance()``.
    func bound<Failure: WatchdogFailure>(failure: @escaping @Sendable (Duration) -> Failure,
                                         _ body: @escaping @Sendable () async throws(Failure) -> Void) async throws(Failure) {
        advance()
        let outcome: Result<Void, Failure> = await withTaskGroup(of: Result<Void, Failure>?.self) { group in
            group.addTask {
                do throws(Failure) { try await body() } catch { return .failure(error) }
                return .success(())
            }
            group.addTask { [self] in
                while !Task.isCancelled {
                    credit(tally.takeUnreported())
                    let idle = ContinuousClock.now - mark.withLock { $0.instant }
                    if idle >= limit { return .failure(failure(idle)) }
                    // Cancellation ends the sleep early; the loop condition then ends the watch.
                    try? await Task.sleep(for: min(limit - idle, .milliseconds(250)))
                }
                return nil
            }
            // The first answer wins; the watch returning nil (cancelled from outside) leaves
            // the body to report its own cancellation.
            for await answer in group {
                if let answer {
                    group.cancelAll()
                    return answer
                }
            }
            return .failure(Failure.cancelled("the update was cancelled"))
        }
        try outcome.get()
    }
}

/// An error the watchdog can throw when the watched phase is cancelled from outside.
protocol WatchdogFailure: Error, Sendable {
    static func cancelled(_ message: String) -> Self
}
