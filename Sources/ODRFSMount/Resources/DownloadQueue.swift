import Synchronization

/// How urgently a download is wanted, in classes: a blocked open() is urgent; explicit tag
/// requests carry their loading priority (0…1); then prefetch; background work (updates)
/// is lowest. Prefetch and background downloads pause while an open waits.
public enum DownloadPriority: Comparable, Sendable, CustomStringConvertible {
    case background
    case prefetch
    case request(Double)
    case urgent

    public var description: String {
        switch self {
        case .background: return "background"
        case .prefetch: return "prefetch"
        case .request(let value): return "\(value)"
        case .urgent: return "urgent"
        }
    }
}

/// Bounds how many downloads run at once and lets urgent ones jump the queue.
///
/// Waiting downloads start in priority order (then first come, first served). Prefetch
/// never takes the last slot, so an open() always finds one free soon even while a long
/// prefetch list streams in. A queued download's priority rises when a more urgent
/// caller joins it.
final class DownloadQueue: Sendable {
    private struct Ticket {
        var id: UInt64
        var priority: DownloadPriority
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var running = 0
        var waiting: [Ticket] = []
        var cancelled: Set<UInt64> = []
        var nextID: UInt64 = 0
    }

    let maximumConcurrent: Int
    private let state = Mutex(State())

    init(maximumConcurrent: Int) {
        self.maximumConcurrent = max(1, maximumConcurrent)
    }

    /// Downloads holding a slot and downloads waiting for one (for metrics).
    var occupancy: (running: Int, waiting: Int) {
        state.withLock { ($0.running, $0.waiting.count) }
    }

    func makeTicket() -> UInt64 {
        state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
    }

    /// Waits for a slot. Throws `CancellationError` if the task is cancelled while queued.
    func acquire(_ ticket: UInt64, priority: DownloadPriority) async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let started = state.withLock { state -> [Ticket]? in
                    if Task.isCancelled || state.cancelled.remove(ticket) != nil { return nil }
                    state.waiting.append(Ticket(id: ticket, priority: priority, continuation: continuation))
                    return startWaiting(&state)
                }
                guard let started else {
                    continuation.resume(throwing: CancellationError())
                    return
                }
                started.forEach { $0.continuation.resume() }
            }
        } onCancel: {
            let removed = state.withLock { state -> Ticket? in
                guard let index = state.waiting.firstIndex(where: { $0.id == ticket }) else {
                    state.cancelled.insert(ticket)
                    return nil
                }
                return state.waiting.remove(at: index)
            }
            removed?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Gives a slot back and starts the most urgent waiting downloads that may run.
    func release(_ ticket: UInt64) {
        let started = state.withLock { state -> [Ticket] in
            state.running -= 1
            state.cancelled.remove(ticket)
            return startWaiting(&state)
        }
        started.forEach { $0.continuation.resume() }
    }

    /// Raises a queued download's priority (a more urgent caller joined it).
    func raise(_ ticket: UInt64, to priority: DownloadPriority) {
        let started = state.withLock { state -> [Ticket] in
            guard let index = state.waiting.firstIndex(where: { $0.id == ticket }), state.waiting[index].priority < priority else { return [] }
            state.waiting[index].priority = priority
            return startWaiting(&state)
        }
        started.forEach { $0.continuation.resume() }
    }

    private func startWaiting(_ state: inout State) -> [Ticket] {
        var started: [Ticket] = []
        while true {
            // Most urgent first; the sort is stable, so equal priorities keep arrival order.
            let ordered = state.waiting.enumerated().sorted { a, b in
                a.element.priority != b.element.priority ? a.element.priority > b.element.priority : a.offset < b.offset
            }
            guard let next = ordered.first,
                  Self.mayStart(next.element.priority, running: state.running, maximum: maximumConcurrent) else { break }
            state.waiting.remove(at: next.offset)
            state.running += 1
            started.append(next.element)
        }
        return started
    }

    private static func mayStart(_ priority: DownloadPriority, running: Int, maximum: Int) -> Bool {
        let limit = priority <= .prefetch && maximum > 1 ? maximum - 1 : maximum
        return running < limit
    }
}
