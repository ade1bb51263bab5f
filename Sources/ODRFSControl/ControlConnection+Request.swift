import Foundation
import Synchronization

extension ControlConnection {
    /// Starts a `request`: a conditional one is answered at once; otherwise a task
    /// waits for the downloads, sending progress, and keeps the retains on success.
    func beginRequest(_ id: Int, tags: [String], loadingPriority: LoadingPriority, conditional: Bool) throws(ControlError) {
        if conditional {
            try state.withLock { state throws(ControlError) in try checkUnusedID(id, in: state) }
            guard let token = try service.beginAccessingIfLocal(tags: tags) else {
                throw ControlError(.notLocal, "not every pack of \(tags.joined(separator: ", ")) is local; a conditional request never downloads")
            }
            guard hold(token, as: id) else { return }
            var reply = ControlResponse.success(id)
            reply.packs = token.packs
            send(reply)
            return
        }
        try state.withLock { state throws(ControlError) in
            try checkUnusedID(id, in: state)
            guard !state.closed else { return }
            // Created under the lock: its body cannot finish (and remove itself)
            // before it is recorded. A wait of its own, so later requests on this
            // connection are not held up behind a download.
            state.inFlight[id] = Task(executorPreference: executor) { [self] in
                await wait(id, tags: tags, loadingPriority: loadingPriority)
            }
        }
    }

    func checkUnusedID(_ id: Int, in state: State) throws(ControlError) {
        if state.held[id] != nil || state.inFlight[id] != nil || state.watches[id] != nil {
            throw ControlError(.badRequest, "request id \(id) is already in use on this connection; choose a new id")
        }
        // Each costs a task and memory: a client (any local user, on a shared mount) must
        // not grow the daemon without bound from one connection.
        guard state.held.count + state.inFlight.count + state.watches.count < Self.maximumOpenRequests else {
            throw ControlError(.tooManyConnections, "this connection already has \(Self.maximumOpenRequests) requests and watches open; end some first")
        }
    }

    /// Requests held or in progress plus watches, per connection.
    static let maximumOpenRequests = 256
    /// Watches (`watch-events`, `watch-disk`) per connection: each may queue events.
    static let maximumWatches = 16

    /// Refuses a watch beyond ``maximumWatches`` on this connection.
    func checkRoomForWatch(in state: State) throws(ControlError) {
        guard state.watches.count < Self.maximumWatches else {
            throw ControlError(.tooManyConnections, "this connection already has \(Self.maximumWatches) watches open; end some first")
        }
    }

    /// Records `token` as held by request `id`, unless the connection is closing or the
    /// request was cancelled: then releases it at once and returns false.
    private func hold(_ token: RetainToken, as id: Int) -> Bool {
        let kept = state.withLock { state -> Bool in
            state.inFlight[id] = nil
            guard !state.closed, !Task.isCancelled else { return false }
            state.held[id] = token
            return true
        }
        if !kept { service.endAccessing(token) }
        return kept
    }

    private func wait(_ id: Int, tags: [String], loadingPriority: LoadingPriority) async {
        let progress = ProgressCoalescer(eventLoop: channel.eventLoop) { [self] completed, total in
            send(.progress(id, completed: completed, total: total), droppable: true)
        }
        do throws(ControlError) {
            let token = try await service.beginAccessing(tags: tags, loadingPriority: loadingPriority, progress: progress.sink)
            if let last = progress.finish() { send(.progress(id, completed: last.completed, total: last.total)) }
            if hold(token, as: id) {
                var reply = ControlResponse.success(id)
                reply.packs = token.packs
                send(reply)
            } else {
                send(.failure(id, ControlError(.cancelled, "request \(id) was cancelled")))
            }
        } catch {
            _ = progress.finish()
            state.withLock { _ = $0.inFlight.removeValue(forKey: id) }
            let reported = Task.isCancelled && error.code != .cancelled
                ? ControlError(.cancelled, "request \(id) was cancelled") : error
            send(.failure(id, reported))
        }
    }
}
