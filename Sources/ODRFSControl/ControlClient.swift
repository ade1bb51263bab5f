import Foundation
import Synchronization

/// A connection to a mount daemon's control socket: sends requests, routes replies and
/// events back to their callers, and keeps the connection (and with it every request
/// held on it) until ``close()`` or deinit.
///
/// ```swift
/// let client = try ControlClient.connect(mountpoint: "/mnt/travel")
/// let reply = try await client.call(.request(tags: ["Italy"], loadingPriority: .default, conditional: false)) { event in
///     print(event.completed ?? 0, "of", event.total ?? 0)
/// }
/// // the Italy packs stay retained until `client.call(.end(request: reply.id!))` or `client.close()`
/// ```
///
/// Replies are read on a dedicated thread. If the daemon goes away every pending call
/// fails with `not-running` and ``waitUntilClosed()`` returns.
public final class ControlClient: Sendable {
    /// The socket this client is connected to.
    public let socketPath: String
    private let socket: UnixSocket
    private let writeLock = Mutex(())
    private let state = Mutex(State())

    private struct State {
        var nextID = 1
        var pending: [Int: CheckedContinuation<Result<ControlResponse, ControlError>, Never>] = [:]
        var handlers: [Int: @Sendable (ControlResponse) -> Void] = [:]
        /// Set once the connection is gone: why.
        var closedBecause: ControlError?
        var closeWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private init(socket: UnixSocket, socketPath: String) {
        self.socket = socket
        self.socketPath = socketPath
    }

    deinit {
        socket.shutdown()
    }

    /// Connects to the daemon serving `mountpoint` (found through its ``RuntimeDirectory``).
    public static func connect(mountpoint: String) throws(ControlError) -> ControlClient {
        let resolved = RuntimeDirectory.resolve(mountpoint: mountpoint)
        return try connect(socketPath: RuntimeDirectory(clientOfMountpoint: resolved).controlSocket, describing: resolved)
    }

    /// Connects to the control socket at `socketPath`; `describing` names the mount in errors.
    public static func connect(socketPath: String, describing mountpoint: String? = nil) throws(ControlError) -> ControlClient {
        let name = mountpoint ?? socketPath
        let socket: UnixSocket
        do {
            socket = try UnixSocket.connect(to: socketPath)
        } catch {
            switch error.errno {
            case EACCES, EPERM:
                throw ControlError(.permissionDenied, "permission denied on the control socket \(socketPath): only the user who mounted \(name) and root may control it")
            case ENOENT, ECONNREFUSED, ENOTDIR:
                throw ControlError(.notRunning, "\(name) is not an ODRFS mount or its daemon is not running (no control socket at \(socketPath))")
            default:
                throw ControlError(.notRunning, "cannot connect to the control socket \(socketPath) of \(name): \(error.reason)")
            }
        }
        let client = ControlClient(socket: socket, socketPath: socketPath)
        client.startReading()
        return client
    }

    /// Sends `operation` and waits for its reply; `onEvent` receives the request's
    /// progress or low-disk-space events (for `watch-disk`, also after the reply).
    /// A failed reply is thrown. If the calling task is cancelled while a `request`
    /// waits, the daemon is told to abandon it (the call then throws `cancelled`).
    @discardableResult
    public func call(_ operation: ControlOperation, onEvent: (@Sendable (ControlResponse) -> Void)? = nil) async throws(ControlError) -> ControlResponse {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<ControlResponse, ControlError>, Never>) in
                let closed = state.withLock { state -> ControlError? in
                    guard state.closedBecause == nil else { return state.closedBecause }
                    state.pending[id] = continuation
                    if let onEvent { state.handlers[id] = onEvent }
                    return nil
                }
                if let closed { continuation.resume(returning: .failure(closed)); return }
                write(ControlRequest(id: id, operation: operation))
                // Cancelled before the request went out: `onCancel` came too early.
                if case .request = operation, Task.isCancelled { cancelRequest(id) }
            }
        } onCancel: {
            if case .request = operation { cancelRequest(id) }
        }
        if case .watchDisk = operation, case .success = result {} else {
            _ = state.withLock { $0.handlers.removeValue(forKey: id) }
        }
        let response = try result.get()
        if case .request = operation, Task.isCancelled {
            // Finished just as it was cancelled: give the retains back.
            _ = try? await call(.end(request: id))
            throw ControlError(.cancelled, "request \(id) was cancelled")
        }
        return response
    }

    /// Asks the daemon to abandon request `id` if it is still in progress.
    public func cancelRequest(_ id: Int) {
        let cancelID = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        write(ControlRequest(id: cancelID, operation: .cancel(request: id)))
    }

    /// Closes the connection: the daemon releases every request held on it.
    public func close() {
        socket.shutdown()
    }

    /// Whether the connection is gone.
    public var isClosed: Bool {
        state.withLock { $0.closedBecause != nil }
    }

    /// Returns when the connection is gone (closed here, or the daemon went away).
    public func waitUntilClosed() async {
        await withCheckedContinuation { continuation in
            let closed = state.withLock { state -> Bool in
                if state.closedBecause == nil { state.closeWaiters.append(continuation) }
                return state.closedBecause != nil
            }
            if closed { continuation.resume() }
        }
    }

    private func write(_ request: ControlRequest) {
        var line = ControlProtocol.encode(request)
        line.append(UInt8(ascii: "\n"))
        // Requests are small and the daemon reads promptly; a failed write shows up as
        // end of stream on the reading side, which fails the pending calls.
        writeLock.withLock { _ in
            if !socket.send(line) { socket.shutdown() }
        }
    }

    private func startReading() {
        let lines = LineReader.lines(from: socket, limit: ControlProtocol.maximumResponseLength, name: "odrfs-control-client")
        Task.detached { [weak self, socket] in
            var reason = ControlError(.notRunning, "the ODRFS daemon closed the connection (the mount was unmounted or its daemon stopped)")
            for await item in lines {
                guard let self else { break }
                guard case .line(let line) = item else {
                    reason = ControlError(.internalError, "the daemon sent a message over \(ControlProtocol.maximumResponseLength) bytes")
                    break
                }
                do throws(ControlError) {
                    let response = try ControlProtocol.decodeResponse(line)
                    if response.id == nil, let error = response.error {
                        reason = error   // e.g. permission denied: the daemon hangs up next
                    }
                    self.deliver(response)
                } catch {
                    reason = error
                    self.socket.shutdown()
                }
            }
            self?.finish(reason)
            socket.close()
        }
    }

    private func deliver(_ response: ControlResponse) {
        guard let id = response.id else { return }
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
    }

    private func finish(_ reason: ControlError) {
        let (pending, waiters) = state.withLock { state in
            state.closedBecause = state.closedBecause ?? reason
            defer {
                state.pending.removeAll()
                state.handlers.removeAll()
                state.closeWaiters.removeAll()
            }
            return (Array(state.pending.values), state.closeWaiters)
        }
        let error = state.withLock { $0.closedBecause! }
        pending.forEach { $0.resume(returning: .failure(error)) }
        waiters.forEach { $0.resume() }
    }
}
