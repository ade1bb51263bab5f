import Foundation
import NIOCore
import Synchronization

/// The state of one client connection: calls waiting for their replies, event handlers
/// by request id, and why the connection ended. Fed by ``ControlClientHandler`` on the
/// event loop; used by ``ControlClient`` from any task. It holds no reference to the
/// `ControlClient`, so dropping the client closes the connection.
final class ControlClientRouter: Sendable {
    typealias Reply = Result<ControlResponse, ControlError>

    private struct State {
        var nextID = 1
        var pending: [Int: CheckedContinuation<Reply, Never>] = [:]
        var handlers: [Int: @Sendable (ControlResponse) -> Void] = [:]
        /// Set once the connection is gone: why.
        var closedBecause: ControlError?
        /// A message without an id (a refusal) that explains the coming hang-up.
        var announced: ControlError?
        var closeWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
    }

    private let state = Mutex(State())

    /// A fresh request id.
    func makeID() -> Int {
        state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
    }

    /// Registers a call; returns why not if the connection is gone already.
    func register(_ id: Int, _ continuation: CheckedContinuation<Reply, Never>, onEvent: (@Sendable (ControlResponse) -> Void)?) -> ControlError? {
        state.withLock { state in
            guard state.closedBecause == nil else { return state.closedBecause }
            state.pending[id] = continuation
            if let onEvent { state.handlers[id] = onEvent }
            return nil
        }
    }

    func removeHandler(_ id: Int) {
        _ = state.withLock { $0.handlers.removeValue(forKey: id) }
    }

    var closedBecause: ControlError? {
        state.withLock { $0.closedBecause }
    }

    /// One line from the daemon (event loop). A malformed one is returned as the
    /// reason to hang up.
    func receive(_ line: ByteBuffer) -> ControlError? {
        let response: ControlResponse
        do throws(ControlError) {
            response = try ControlProtocol.decodeResponse(Data(line.readableBytesView))
        } catch {
            return error
        }
        guard let id = response.id else {
            if let error = response.error { state.withLock { $0.announced = error } }   // e.g. permission denied
            return nil
        }
        if response.isReply {
            let continuation = state.withLock { $0.pending.removeValue(forKey: id) }
            if let error = response.error, response.ok == false {
                continuation?.resume(returning: .failure(error))
            } else {
                continuation?.resume(returning: .success(response))
            }
        } else if let handler = state.withLock({ $0.handlers[id] }) {
            handler(response)
        }
        return nil
    }

    /// The connection is gone: fails every pending call with `reason` (or with what the
    /// daemon announced before hanging up) and wakes ``waitUntilClosed()``.
    func finish(_ reason: ControlError) {
        let (pending, waiters, error) = state.withLock { state in
            state.closedBecause = state.closedBecause ?? state.announced ?? reason
            defer {
                state.pending.removeAll()
                state.handlers.removeAll()
                state.closeWaiters.removeAll()
            }
            return (Array(state.pending.values), Array(state.closeWaiters.values), state.closedBecause!)   // set just above
        }
        pending.forEach { $0.resume(returning: .failure(error)) }
        waiters.forEach { $0.resume() }
    }

    /// Returns when the connection is gone or the calling task is cancelled.
    func waitUntilClosed() async {
        let key = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let wait = state.withLock { state -> Bool in
                    guard state.closedBecause == nil, !Task.isCancelled else { return false }
                    state.closeWaiters[key] = continuation
                    return true
                }
                if !wait { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.closeWaiters.removeValue(forKey: key) }?.resume()
        }
    }
}
