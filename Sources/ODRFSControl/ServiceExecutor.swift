import NIOPosix

/// The threads on which the ``ControlServer`` calls its ``ControlService``: a task
/// executor over a small `NIOThreadPool`.
///
/// Service methods may block briefly (a lock, an SQLite write, `statvfs`); running them
/// here keeps that off the event loop, which must never block, and off Swift's
/// cooperative pool, whose few threads the rest of the daemon needs. A task that
/// awaits (a download) suspends and gives its thread back.
final class ServiceExecutor: TaskExecutor {
    private let pool: NIOThreadPool

    /// Starts `threads` threads.
    init(threads: Int) {
        pool = NIOThreadPool(numberOfThreads: threads)
        pool.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        // After shutdown the pool runs the item at once with `.cancelled`: the job still
        // runs (on the caller's thread), so no task is ever left hanging.
        pool.submit { _ in job.runSynchronously(on: executor) }
    }

    /// Stops the threads once their queued work is done.
    func shutdown() async {
        try? await pool.shutdownGracefully()
    }
}
