/// The threading rule for replies, checked on every answer in debug builds: a reply
/// never leaves from a Swift task.
///
/// A reply is a `writev` or a `splice` to /dev/fuse, and a data reply reads its bytes from
/// a file on the way (the page cache, or the disk on a miss). Swift's cooperative pool has
/// only as many threads as cores and is shared by every download, the control plane and
/// prefetch: a reply sent from a task blocks one of them on the kernel. So replies leave
/// from a libfuse or io_uring queue thread (inside the callback), from the thread that
/// verified the bytes a waiter needed, from an I/O executor thread or a dispatch queue
/// (interrupts, timers) — from any thread that is not running a task.
///
/// "Not running a task" is what `withUnsafeCurrentTask` tells, which is exactly the
/// cooperative pool plus task executors: an I/O executor's pool threads, libfuse's
/// threads and dispatch queues never have a current task. The check is an assertion, so a
/// violation stops a debug daemon at once (a mount test then fails) and costs nothing in
/// a release build. Teardown's EINTR answers and the EIO for a dropped request are not
/// checked: they are last-resort paths that may run wherever the session or request is
/// released.
enum ReplyThread {
    /// Asserts (debug builds only) that the calling thread is not running a Swift task.
    static func check(_ operation: StaticString) {
        assert(!isRunningTask, "FUSE reply (\(operation)) sent from a Swift task, on the cooperative pool: reply from the thread that verified the bytes, an I/O executor thread or a dispatch queue")
    }

    /// True on a thread that is running a Swift task (the cooperative pool or a task executor).
    static var isRunningTask: Bool {
        withUnsafeCurrentTask { $0 != nil }
    }
}
