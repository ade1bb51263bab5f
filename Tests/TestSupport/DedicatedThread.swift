import Foundation

/// Runs `body` on a new thread of its own and resumes the caller with its result: for
/// blocking system calls (a read of a FUSE mount, a blocking `connect`) that must not
/// occupy a thread of Swift's cooperative pool, where the reply they wait for (a deferred
/// FUSE reply of an in-process mount, another test's progress) may need that very thread.
public func onDedicatedThread<T: Sendable>(name: String = "test-blocking", _ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let thread = Thread {
            continuation.resume(returning: body())
        }
        thread.name = name
        thread.start()
    }
}
