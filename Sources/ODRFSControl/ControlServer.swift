import Foundation
import Logging
import Synchronization

/// Serves the control protocol on a Unix socket for one mount, driven by a ``ControlService``.
///
/// ```swift
/// let server = ControlServer(socketPath: RuntimeDirectory(mountpoint: mp).controlSocket,
///                            service: service, logger: logger)
/// try server.start()      // creates the directory (0700) and the socket (0600)
/// …
/// await server.stop()     // closes every connection, releases their retains, removes the socket
/// ```
///
/// One thread accepts connections; each connection has a reader thread, a writer
/// thread and a task that handles its requests in order (requests that wait for
/// downloads run in tasks of their own), so a slow or silent client never stalls the
/// daemon or another client. Only the daemon's own user and root may connect: the
/// peer is checked with SO_PEERCRED and anyone else gets a `permission-denied` line
/// and is disconnected (the 0600 socket in a 0700 directory already keeps them out).
public final class ControlServer: Sendable {
    /// Where the socket lives.
    public let socketPath: String
    private let service: any ControlService
    private let logger: Logger
    private let allowedUIDs: Set<uid_t>
    /// Each connection costs two threads (its blocking reader and writer): a client
    /// that opens connections in a loop must not exhaust the daemon.
    private let maximumConnections: Int
    private let state = Mutex(State())

    private struct State {
        var listener: UnixSocket?
        var acceptThreadDone: CheckedContinuation<Void, Never>?
        var acceptFinished = false
        var connections: [UInt64: ControlConnection] = [:]
        var tasks: [UInt64: Task<Void, Never>] = [:]
        var nextConnection: UInt64 = 0
        var stopped = false
    }

    /// A server for `socketPath` (normally ``RuntimeDirectory/controlSocket``).
    /// `allowedUIDs` defaults to the daemon's effective uid and root; connections beyond
    /// `maximumConnections` at once are answered `too-many-connections` and closed.
    public init(socketPath: String, service: any ControlService, logger: Logger, allowedUIDs: Set<uid_t>? = nil,
                maximumConnections: Int = 128) {
        self.socketPath = socketPath
        self.service = service
        self.logger = logger
        self.allowedUIDs = allowedUIDs ?? [geteuid(), 0]
        self.maximumConnections = maximumConnections
    }

    /// Creates the socket's directory (0700) if needed, removes a stale socket (one
    /// nobody answers on), listens (socket mode 0600) and starts accepting. Throws if
    /// another daemon is serving the same path or the socket cannot be created.
    public func start() throws(ControlError) {
        let directory = (socketPath as NSString).deletingLastPathComponent
        mkdir((directory as NSString).deletingLastPathComponent, 0o700)
        mkdir(directory, 0o700)
        if access(socketPath, F_OK) == 0 {
            if let live = try? UnixSocket.connect(to: socketPath) {
                live.close()
                throw ControlError(.internalError, "another daemon is serving the control socket \(socketPath)")
            }
            unlink(socketPath)
        }
        let listener = try UnixSocket.listen(at: socketPath)
        guard chmod(socketPath, 0o600) == 0 else {
            let reason = String(cString: strerror(errno))
            listener.close()
            unlink(socketPath)
            throw ControlError(.internalError, "chmod() on control socket \(socketPath) failed: \(reason)")
        }
        state.withLock { $0.listener = listener }
        let thread = Thread { [self] in acceptLoop(listener) }
        thread.name = "odrfs-control-accept"
        thread.start()
        logger.info("control socket listening", metadata: ["control.socket": "\(socketPath)"])
    }

    /// Stops accepting, disconnects every client (releasing every retain their
    /// requests hold and cancelling requests in flight), waits for their handlers to
    /// finish and removes the socket. Idempotent.
    public func stop() async {
        let listener = state.withLock { state -> UnixSocket? in
            state.stopped = true
            return state.listener
        }
        guard let listener else { return }
        listener.shutdown()   // wakes accept(): it returns EINVAL
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let finished = state.withLock { state -> Bool in
                if !state.acceptFinished { state.acceptThreadDone = done }
                return state.acceptFinished
            }
            if finished { done.resume() }
        }
        listener.close()
        let (connections, tasks) = state.withLock { state in
            state.listener = nil
            return (Array(state.connections.values), Array(state.tasks.values))
        }
        connections.forEach { $0.disconnect() }
        for task in tasks { await task.value }
        unlink(socketPath)
        logger.info("control socket closed", metadata: ["control.socket": "\(socketPath)"])
    }

    /// The number of connected clients (for tests and status).
    public var connectionCount: Int {
        state.withLock { $0.connections.count }
    }

    private func acceptLoop(_ listener: UnixSocket) {
        while let client = listener.accept() {
            let peer = client.peerUID()
            guard let peer, allowedUIDs.contains(peer) else {
                logger.warning("control connection refused: peer is neither the daemon's user nor root", metadata: [
                    "peer.uid": "\(peer.map { "\($0)" } ?? "unknown")", "daemon.uid": "\(geteuid())",
                ])
                refuse(client, ControlError(.permissionDenied, "permission denied: only uid \(geteuid()) (the user who mounted) and root may use this ODRFS daemon"))
                continue
            }
            enum Admission { case accepted, stopped, full }
            let admission = state.withLock { state -> Admission in
                guard !state.stopped else { return .stopped }
                guard state.connections.count < maximumConnections else { return .full }
                let number = state.nextConnection
                state.nextConnection += 1
                let connection = ControlConnection(socket: client, number: number, service: service, logger: logger)
                state.connections[number] = connection
                state.tasks[number] = Task { [self] in
                    await connection.run()
                    self.state.withLock { state in
                        state.connections[number] = nil
                        state.tasks[number] = nil
                    }
                }
                return .accepted
            }
            switch admission {
            case .accepted: break
            case .stopped: client.close()
            case .full:
                logger.warning("control connection refused: too many connections", metadata: ["control.limit": "\(maximumConnections)"])
                refuse(client, ControlError(.tooManyConnections, "this ODRFS daemon already serves \(maximumConnections) control connections; close some and retry"))
            }
        }
        let waiter = state.withLock { state in
            state.acceptFinished = true
            return state.acceptThreadDone
        }
        waiter?.resume()
    }

    /// Tells a refused peer why, then hangs up. The reply is small and the socket
    /// buffer empty, so the send never blocks.
    private func refuse(_ client: UnixSocket, _ error: ControlError) {
        var line = ControlProtocol.encode(ControlResponse.failure(nil, error))
        line.append(UInt8(ascii: "\n"))
        _ = client.send(line)
        client.shutdown()
        client.close()
    }
}
