import Glibc
import Synchronization

/// Lets replies through while the session is alive and turns every later
/// reply into a no-op, so nothing touches libfuse after `fuse_session_destroy`.
///
/// The state is one atomic word: the top bit says "closed", the rest counts
/// replies in flight. A reply enters (fails once closed), calls libfuse, and
/// leaves; `close` sets the bit and then waits for the count to drain, so
/// after `close` returns no reply is running and none can start.
/// Lock-free because it sits on every reply's path.
final class ReplyGate: Sendable {
    private static let closedBit: UInt64 = 1 << 63
    private let state = Atomic<UInt64>(0)

    /// Returns false when the gate is closed; otherwise the caller must `leave()`.
    func enter() -> Bool {
        var current = state.load(ordering: .relaxed)
        while current & Self.closedBit == 0 {
            let (exchanged, original) = state.compareExchange(expected: current, desired: current + 1, ordering: .acquiring)
            if exchanged {
                return true
            }
            current = original
        }
        return false
    }

    func leave() {
        state.wrappingSubtract(1, ordering: .releasing)
    }

    var isClosed: Bool {
        state.load(ordering: .acquiring) & Self.closedBit != 0
    }

    /// Closes the gate and waits up to `timeout` seconds for replies in
    /// flight; a reply is one write to /dev/fuse, so this is normally instant.
    /// Returns false if some reply was still running at the deadline.
    @discardableResult
    func close(timeout: Double = 5) -> Bool {
        state.bitwiseOr(Self.closedBit, ordering: .acquiringAndReleasing)
        let deadline = monotonicSeconds() + timeout
        while state.load(ordering: .acquiring) & ~Self.closedBit != 0 {
            if monotonicSeconds() > deadline {
                return false
            }
            usleep(200)
        }
        return true
    }
}

/// Seconds on CLOCK_MONOTONIC, for deadlines.
func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
