import CGlibcExtras
import ODRFSRuntime
import Synchronization

/// Hands the heap's free memory back to the kernel (`malloc_trim`), on the I/O executor
/// (it walks every arena, a few milliseconds to tens of them), at most one at a time.
///
/// glibc keeps what a thread frees in that thread's arena. Two moments free a lot at once:
/// the end of start-up (the file index read and validated on several threads: 53 → 30 MiB
/// of RssAnon on a 1,000,000-file bundle, issue 28) and a large control reply (`odrfs
/// status` of 100,000 packs encodes about 20 MB of JSON; each call left the daemon 150 MiB
/// larger, 190 → 340 → 484 MiB, until trimmed).
///
/// Requests while one is queued or running are folded into it, so a client polling status
/// in a loop costs one trim at a time, not a queue of them.
final class HeapRelease: Sendable {
    /// The daemon's one instance.
    static let shared = HeapRelease()

    private let queued = Mutex(false)
    /// Trims done, for tests.
    private let count = Atomic<Int>(0)

    /// Asks for a trim soon; returns at once.
    @Sendable func request() {
        let first = queued.withLock { queued -> Bool in
            defer { queued = true }
            return !queued
        }
        guard first else { return }
        IOExecutor.cache.submit { [self] in
            // Cleared before the trim: memory freed while it runs asks for another.
            queued.withLock { $0 = false }
            _ = odrfs_release_free_heap()
            count.add(1, ordering: .relaxed)
        }
    }

    /// How many trims have run.
    var trims: Int { count.load(ordering: .relaxed) }
}
