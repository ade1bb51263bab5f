import Foundation
import Logging
import ODRFSCore
import ODRFSRuntime
import ODRFSStore
import Synchronization

/// Records, for this mount session, the first need of each pack: by an open (of which
/// file), a tag request, the initial install or prefetch, and how long after the mount
/// started. `odrfs trace` exports it; `--learn-prefetch` replays past sessions' order.
///
/// A pack is recorded once when first demanded (open, request, initial install), and
/// once more at most when prefetch reached it before any demand, so the trace can show
/// prefetch-only packs without them masking the workload's real order. Base is never
/// recorded (always local, needed by everything). Rows go to the cache index on the I/O
/// executor; the caller pays one lock and an array lookup.
final class AccessRecorder: Sendable {
    private struct State {
        var demanded: [Bool]
        var prefetched: [Bool]
        var nextRank = 0
        /// Whether ``begin(now:)`` has run (at init, or later for a mount's first manager).
        var begun = false
        var session: Int64?
        var started: ContinuousClock.Instant = .now
    }

    /// The session's id in the cache index; nil if it could not be recorded or has not begun.
    var session: Int64? { state.withLock { $0.session } }
    private let manifest: Manifest
    private let state: Mutex<State>
    private let store: PackStore
    private let io: IOExecutor
    private let logger: Logger

    /// Starts a session in the index unless `beginning` is false (a mount's first manager,
    /// built before its file index has arrived: ``begin(now:)`` once the revision is served,
    /// so that a mount that then fails records no empty session, which would push a real one
    /// out of the kept sessions). Blocking (SQLite): call it on the I/O executor.
    init(manifest: Manifest, store: PackStore, io: IOExecutor, logger: Logger, now: Date, beginning: Bool = true) {
        self.manifest = manifest
        self.store = store
        self.io = io
        self.logger = logger
        state = Mutex(State(demanded: Array(repeating: false, count: manifest.packs.count),
                            prefetched: Array(repeating: false, count: manifest.packs.count)))
        if beginning { begin(now: now) }
    }

    /// Starts the session (once; later calls do nothing) and the clock of its entries.
    /// Blocking (SQLite): on the I/O executor.
    func begin(now: Date) {
        guard state.withLock({ state -> Bool in
            defer { state.begun = true }
            return !state.begun
        }) else { return }
        let session: Int64?
        do {
            session = try store.bundleIndex.beginTraceSession(started: now, bundleVersion: manifest.bundleVersion.hex)
        } catch {
            logger.error("cannot start an access trace session; this session is not recorded", metadata: ["error": "\(error)"])
            session = nil
        }
        state.withLock { state in
            state.session = session
            state.started = .now
        }
    }

    /// Notes that `cause` needs `pack`; `file` (evaluated only for a first need) is the
    /// path an open came through.
    func note(_ pack: PackNumber, cause: TraceEntry.Cause, file: @autoclosure () -> String? = nil) {
        let index = Int(pack.rawValue)
        guard index < manifest.packs.count, !manifest.isBase(pack) else { return }
        let noted = state.withLock { state -> (rank: Int, session: Int64, started: ContinuousClock.Instant)? in
            guard let session = state.session else { return nil }
            if cause.isDemand {
                guard !state.demanded[index] else { return nil }
                state.demanded[index] = true
            } else {
                guard !state.demanded[index], !state.prefetched[index] else { return nil }
                state.prefetched[index] = true
            }
            defer { state.nextRank += 1 }
            return (state.nextRank, session, state.started)
        }
        guard let (rank, session, started) = noted else { return }
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let descriptor = manifest.pack(pack)
        let entry = TraceEntry(pack: descriptor.id.rawValue, tags: descriptor.tags.map(\.name), cause: cause,
                               firstFile: cause == .open ? file() : nil, secondsSinceMount: seconds)
        io.submit { [store, logger] in
            do {
                try store.bundleIndex.appendTrace(session: session, [(rank, entry)])
            } catch {
                logger.warning("cannot record an access in the trace", metadata: ["pack.id": "\(entry.pack)", "error": "\(error)"])
            }
        }
    }
}
