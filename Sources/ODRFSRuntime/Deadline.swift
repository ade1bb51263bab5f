import Dispatch
import Synchronization

/// What became of a call bounded by a deadline.
public enum DeadlineOutcome<Value: Sendable>: Sendable {
    /// The call returned in time.
    case finished(Value)
    /// The deadline passed first. The call may still be blocked in the kernel; its result,
    /// when it comes, goes to the `onLate` handler.
    case timedOut
    /// The waiting task was cancelled first (same caveat as `timedOut`).
    case cancelled
}

extension IOExecutor {
    /// Runs `body` on a pool thread but waits at most `deadline` for it.
    ///
    /// This is how a read from a file origin on NFS, sshfs or another FUSE mount is
    /// bounded: `poll(2)` says a regular file is always readable, and a thread in
    /// `read(2)` on a stalled mount cannot be interrupted. When the deadline passes, or the
    /// waiting task is cancelled, the caller is answered at once and the thread is left
    /// to finish on its own; `onLate` then receives the result so it can release what the
    /// call acquired (close a descriptor opened too late, free a buffer).
    public func run<Value: Sendable>(
        deadline: Duration,
        _ body: @escaping @Sendable () -> Value,
        onLate: @escaping @Sendable (Value) -> Void = { _ in }
    ) async -> DeadlineOutcome<Value> {
        let gate = OneShot<DeadlineOutcome<Value>>()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<DeadlineOutcome<Value>, Never>) in
                gate.arm(continuation)
                submit {
                    let value = body()
                    if !gate.resolve(.finished(value)) { onLate(value) }
                }
                let nanoseconds = deadline.components.seconds.multipliedReportingOverflow(by: 1_000_000_000)
                let delay = nanoseconds.overflow ? Int64.max : nanoseconds.partialValue.addingReportingOverflow(deadline.components.attoseconds / 1_000_000_000).partialValue
                DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: max(0, delay)))) {
                    gate.resolve(.timedOut)
                }
            }
        } onCancel: {
            gate.resolve(.cancelled)
        }
    }
}

/// Resumes a continuation exactly once, whichever of several events comes first (a result
/// racing a cancellation or a deadline); an event that arrives before the continuation is
/// armed is kept and delivered on arming.
public final class OneShot<Value: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Value, Never>?
        var early: Value?
        var done = false
    }

    private let state = Mutex(State())

    public init() {}

    /// Hands over the continuation to resume (once).
    public func arm(_ continuation: CheckedContinuation<Value, Never>) {
        let early = state.withLock { state -> Value? in
            if let early = state.early {
                state.early = nil
                return early
            }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(returning: early) }
    }

    /// Delivers `value` if nothing was delivered yet; returns whether it was.
    @discardableResult
    public func resolve(_ value: Value) -> Bool {
        let continuation = state.withLock { state -> CheckedContinuation<Value, Never>?? in
            guard !state.done else { return .none }
            state.done = true
            if let continuation = state.continuation {
                state.continuation = nil
                return .some(continuation)
            }
            state.early = value
            return .some(nil)
        }
        switch continuation {
        case .none: return false
        case .some(let continuation?):
            continuation.resume(returning: value)
            return true
        case .some(nil): return true
        }
    }
}
