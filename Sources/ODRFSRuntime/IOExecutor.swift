import Dispatch
import NIOPosix
import Synchronization

/// A small pool of OS threads for blocking system calls, so that Swift's cooperative
/// pool — as many threads as cores — never blocks.
///
/// Everything that may sleep in the kernel runs here: `write`, `fsync`, `rename`,
/// `unlink`, `statvfs`, SQLite, reads of local or network files, and the FUSE replies
/// that splice from a pack file. A task that needs such a call awaits ``run(_:)``: it
/// suspends (freeing its cooperative thread) until a pool thread has done the work.
///
/// Two executors exist in a mount, so that one kind of stall cannot starve the other:
/// ``cache`` for the local cache (fast disks, but fsync can take seconds), and the file
/// origins' (in ODRFSFetch), whose reads may hang forever on a stalled network or FUSE
/// filesystem and are therefore always bounded by ``run(deadline:_:onLate:)``.
///
/// Built on SwiftNIO's `NIOThreadPool`. Threads are started once and live for the
/// process; there is no shutdown, because work submitted at exit (saving access times)
/// must still run.
public final class IOExecutor: Sendable {
    private let pool: NIOThreadPool
    /// A name for logs and thread listings.
    public let name: String
    public let threadCount: Int

    /// Starts `threads` threads.
    public init(name: String, threads: Int) {
        self.name = name
        self.threadCount = max(1, threads)
        self.pool = NIOThreadPool(numberOfThreads: max(1, threads))
        pool.start()
    }

    /// The executor for the local cache: pack writes, publication, the SQLite index,
    /// deletions, `statvfs`, and FUSE replies that read pack files.
    public static let cache = IOExecutor(name: "odrfs-io", threads: 4)

    /// Runs `body` on a pool thread and returns its result. The calling task is
    /// suspended meanwhile, never blocked. Not cancellable once started: blocking calls
    /// cannot be interrupted; use ``run(deadline:_:onLate:)`` where a call may hang.
    public func run<Value: Sendable, Failure: Error>(
        _ body: @escaping @Sendable () throws(Failure) -> Value
    ) async throws(Failure) -> Value {
        let result: Result<Value, Failure> = await withCheckedContinuation { continuation in
            submit {
                do throws(Failure) {
                    continuation.resume(returning: .success(try body()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }

    /// Runs `body` on a pool thread without waiting for it (deletions, replies, index writes
    /// whose failure is only logged). Work submitted after the pool stopped runs on a
    /// dispatch queue instead: it is never dropped.
    public func submit(_ body: @escaping @Sendable () -> Void) {
        pool.submit { state in
            switch state {
            case .active: body()
            case .cancelled: DispatchQueue.global().async(execute: body)
            }
        }
    }
}
