import CFuse3
import Dispatch
import Synchronization

/// Interrupt handlers of deferred requests, keyed by an integer token.
///
/// Why a token and not a pointer: libfuse may call the interrupt callback
/// synchronously inside `fuse_req_interrupt_func` and, racing with a reply,
/// even after the request was answered and its `DeferredRequest` freed. The
/// callback therefore only carries a never-reused number, looks it up here,
/// and finds nothing once the request is gone.
///
/// Why handlers run on a dispatch queue: the callback runs while libfuse
/// holds the request's lock. A handler that replied right there (cancel a
/// Task whose cancellation handler answers EINTR) would free the request
/// under that lock. Hopping off the libfuse thread makes any handler safe.
enum InterruptTable {
    private struct Entry {
        var handler: (@Sendable () -> Void)?
        var fired = false
    }

    private static let entries = Mutex<[UInt64: Entry]>([:])
    private static let nextToken = Atomic<UInt64>(1)

    /// A fresh token, never 0 (0 would be a NULL `void *`).
    static func makeToken() -> UInt64 {
        nextToken.wrappingAdd(1, ordering: .relaxed).oldValue
    }

    /// Stores the handler; runs it at once (asynchronously) if the interrupt already arrived.
    static func setHandler(_ handler: @escaping @Sendable () -> Void, for token: UInt64) {
        let runNow = entries.withLock { entries -> Bool in
            var entry = entries[token] ?? Entry()
            if entry.fired {
                entry.handler = nil
                entries[token] = entry
                return true
            }
            entry.handler = handler
            entries[token] = entry
            return false
        }
        if runNow {
            DispatchQueue.global().async(execute: handler)
        }
    }

    /// Called from libfuse's interrupt callback. Marks the token interrupted
    /// and schedules its handler, at most once.
    static func fire(_ token: UInt64) {
        let handler = entries.withLock { entries -> (@Sendable () -> Void)? in
            // An unknown token belongs to a request already answered: nothing to do.
            guard var entry = entries[token], !entry.fired else { return nil }
            entry.fired = true
            let handler = entry.handler
            entry.handler = nil
            entries[token] = entry
            return handler
        }
        if let handler {
            DispatchQueue.global().async(execute: handler)
        }
    }

    static func isFired(_ token: UInt64) -> Bool {
        entries.withLock { $0[token]?.fired ?? false }
    }

    /// Forgets the token once its request is answered.
    static func remove(_ token: UInt64) {
        _ = entries.withLock { $0.removeValue(forKey: token) }
    }

    /// Registers the C callback for a request that is known to be unanswered.
    /// Must be called under `RequestRegistry`'s lock (see its lock order).
    static func register(token: UInt64, with request: fuse_req_t) {
        fuse_req_interrupt_func(request, interruptCallback, UnsafeMutableRawPointer(bitPattern: UInt(token)))
    }
}

/// The C interrupt callback: captures nothing, touches nothing but the token table.
private let interruptCallback: fuse_interrupt_func_t = { _, data in
    InterruptTable.fire(UInt64(UInt(bitPattern: data)))
}
