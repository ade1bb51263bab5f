import CGlibcExtras
import ODRFSRuntime
import Synchronization

/// Hands the heap's free memory back to the kernel (`malloc_trim`) on the I/O executor,
/// one trim at a time: it walks every arena, holding each one's lock while it returns pages.
///
/// glibc keeps what a thread frees in that thread's arena. Two moments free a lot at once:
/// the end of start-up (the file index read and validated on several threads: 53 → 30 MiB
/// of RssAnon on a 1,000,000-file bundle, issue 28) and a large control reply (`odrfs
/// status` of 100,000 packs encodes about 20 MB of JSON; each call left the daemon 150 MiB
/// larger, 190 → 340 → 484 MiB, until trimmed).
///
/// Requests while a trim is queued fold into it; requests while one runs ask for exactly one
/// more after it (what was freed meanwhile is then returned too). A client polling status in
/// a loop thus costs at most one trim running and one waiting, never a queue of them or two
/// in parallel.
final class HeapRelease: Sendable {
    /// The daemon's one instance.
    static let shared = HeapRelease()

    private enum Phase {
        case idle
        case queued
        case running
        /// Running, and asked for again since it started.
        case runningAndRequested
    }

    private let phase = Mutex(Phase.idle)
    private let completed = Atomic<Int>(0)
    private let trim: @Sendable () -> Void
    private let io: IOExecutor

    /// `trim` is glibc's `malloc_trim(0)` and `io` the cache's executor outside tests.
    init(io: IOExecutor = .cache, trim: @escaping @Sendable () -> Void = { _ = odrfs_release_free_heap() }) {
        self.io = io
        self.trim = trim
    }

    /// Asks for a trim soon; returns at once.
    func request() {
        let submit = phase.withLock { phase -> Bool in
            switch phase {
            case .idle:
                phase = .queued
                return true
            case .running:
                phase = .runningAndRequested
                return false
            case .queued, .runningAndRequested:
                return false
            }
        }
        if submit { io.submit { [self] in run() } }
    }

    private func run() {
        phase.withLock { $0 = .running }
        trim()
        completed.add(1, ordering: .relaxed)
        let again = phase.withLock { phase -> Bool in
            guard case .runningAndRequested = phase else {
                phase = .idle
                return false
            }
            phase = .queued
            return true
        }
        if again { io.submit { [self] in run() } }
    }

    /// Trims run so far.
    var trims: Int { completed.load(ordering: .relaxed) }
}
