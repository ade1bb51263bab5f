import NIOCore
import Synchronization

/// Turns a service's progress reports (any rate, any thread) into progress events for
/// one request: only the latest value is kept, and it is sent on the event loop at most
/// every ``interval``. ``finish()`` stops it and hands back the value not yet sent, so
/// the last progress goes out before the reply.
final class ProgressCoalescer: Sendable {
    /// Progress events are sent at most this often per request (plus the last one).
    static let interval = TimeAmount.milliseconds(100)

    private struct State {
        var latest: (completed: Int64, total: Int64)?
        var lastSent: NIODeadline?
        var scheduled = false
        var finished = false
    }

    private let state = Mutex(State())
    private let eventLoop: any EventLoop
    /// Sends one event; called on the event loop.
    private let send: @Sendable (_ completed: Int64, _ total: Int64) -> Void

    init(eventLoop: any EventLoop, send: @escaping @Sendable (_ completed: Int64, _ total: Int64) -> Void) {
        self.eventLoop = eventLoop
        self.send = send
    }

    /// The sink handed to the service.
    var sink: ProgressSink {
        ProgressSink { [self] completed, total in update(completed: completed, total: total) }
    }

    private func update(completed: Int64, total: Int64) {
        let delay = state.withLock { state -> TimeAmount? in
            guard !state.finished else { return nil }
            state.latest = (completed, total)
            guard !state.scheduled else { return nil }
            state.scheduled = true
            guard let lastSent = state.lastSent else { return .zero }
            let wait = lastSent + Self.interval - .now()
            return wait > .zero ? wait : .zero
        }
        guard let delay else { return }
        if delay == .zero {
            eventLoop.execute { [self] in flush() }
        } else {
            eventLoop.scheduleTask(in: delay) { [self] in flush() }
        }
    }

    /// On the event loop: sends the latest value. Writing synchronously here (not via a
    /// later loop job) keeps this event ahead of a reply queued after ``finish()``.
    private func flush() {
        let value = state.withLock { state -> (completed: Int64, total: Int64)? in
            state.scheduled = false
            guard !state.finished, let latest = state.latest else { return nil }
            state.latest = nil
            state.lastSent = .now()
            return latest
        }
        if let value { send(value.completed, value.total) }
    }

    /// Stops sending; returns the latest value not yet sent.
    func finish() -> (completed: Int64, total: Int64)? {
        state.withLock { state in
            state.finished = true
            defer { state.latest = nil }
            return state.latest
        }
    }
}
