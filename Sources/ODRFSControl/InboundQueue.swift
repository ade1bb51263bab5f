import NIOCore
import Synchronization

/// Carries a connection's frames from its channel handler (on the event loop) to the
/// task that handles them in order, with backpressure: past `highWater` queued frames
/// the handler stops reading from the socket, and it reads again once the task has
/// caught up to `lowWater`. A client that floods requests is slowed, never buffered
/// without bound.
final class InboundQueue: Sendable {
    static let highWater = 32
    static let lowWater = 8

    private struct State {
        var frames: [ControlFrame] = []
        var head = 0
        var waiter: CheckedContinuation<ControlFrame?, Never>?
        var finished = false
        /// Reading is paused; `readPending` says whether the channel asked to read meanwhile.
        var paused = false
        var readPending = false
        var count: Int { frames.count - head }
    }

    private let state = Mutex(State())
    /// Asks the channel to read again (thread-safe: `Channel.read()`).
    private let resumeReading: @Sendable () -> Void

    init(resumeReading: @escaping @Sendable () -> Void) {
        self.resumeReading = resumeReading
    }

    /// Queues a frame (event loop).
    func push(_ frame: ControlFrame) {
        let waiter = state.withLock { state -> CheckedContinuation<ControlFrame?, Never>? in
            guard !state.finished else { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.frames.append(frame)
            if state.count >= Self.highWater { state.paused = true }
            return nil
        }
        waiter?.resume(returning: frame)
    }

    /// Whether the channel may read now (event loop); if not, the read is remembered.
    func mayRead() -> Bool {
        state.withLock { state in
            if state.paused { state.readPending = true }
            return !state.paused
        }
    }

    /// No more frames will come: at end of input the queued ones are still handled (their
    /// replies can go out); when the connection is closed they are `discarding`.
    func finish(discarding: Bool) {
        let waiter = state.withLock { state -> CheckedContinuation<ControlFrame?, Never>? in
            state.finished = true
            if discarding {
                state.frames.removeAll()
                state.head = 0
            }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// The next frame, in order; nil once finished and drained.
    func next() async -> ControlFrame? {
        await withCheckedContinuation { continuation in
            enum Outcome { case frame(ControlFrame), end, wait }
            let (outcome, resume) = state.withLock { state -> (Outcome, Bool) in
                guard state.count > 0 else {
                    if state.finished { return (.end, false) }
                    state.waiter = continuation
                    return (.wait, false)
                }
                let frame = state.frames[state.head]
                state.head += 1
                if state.head == state.frames.count {
                    state.frames.removeAll(keepingCapacity: true)
                    state.head = 0
                }
                var resume = false
                if state.paused && state.count <= Self.lowWater {
                    state.paused = false
                    resume = state.readPending
                    state.readPending = false
                }
                return (.frame(frame), resume)
            }
            if resume { resumeReading() }
            switch outcome {
            case .frame(let frame): continuation.resume(returning: frame)
            case .end: continuation.resume(returning: nil)
            case .wait: break
            }
        }
    }
}
