import Foundation
import NIOCore

extension ControlServer {
    /// Sets up an accepted channel, on its event loop: checks the peer's uid and the
    /// connection cap, then either installs the protocol's handlers and starts the
    /// connection's task, or installs a handler that says why it is refused and hangs up.
    func admit(_ channel: any Channel, executor: ServiceExecutor) -> EventLoopFuture<Void> {
        PeerCredentials.uid(of: channel).flatMap { [self] peer in
            guard let peer, access.mayConnect(peer) else {
                logger.warning("control connection refused: peer is neither the daemon's user nor root", metadata: [
                    "peer.uid": "\(peer.map { "\($0)" } ?? "unknown")", "daemon.uid": "\(geteuid())",
                ])
                return refuse(channel, ControlError(.permissionDenied, "permission denied: only uid \(geteuid()) (the user who mounted) and root may use this ODRFS daemon"))
            }
            enum Admission { case accepted(ControlConnection), stopped, full }
            let privileged = access.mayChange(peer)
            let admission = state.withLock { state -> Admission in
                guard !state.stopped else { return .stopped }
                guard state.connections.count < maximumConnections else { return .full }
                // On a shared mount other users get a few connections each, and never the
                // last ones: the owner and root can always connect to repair things.
                if !privileged {
                    guard state.connections.count < maximumConnections - Self.privilegedReserve,
                          state.connections.values.lazy.filter({ $0.peer == peer }).count < Self.connectionsPerOtherUser
                    else { return .full }
                }
                let number = state.nextConnection
                state.nextConnection += 1
                let connection = ControlConnection(channel: channel, number: number, service: service, executor: executor, logger: logger,
                                                   peer: peer, mayChange: privileged, afterLargeReply: afterLargeReply)
                state.connections[number] = connection
                // Created under the lock: `stop()` either sees it or this sees `stopped`.
                state.tasks[number] = Task(executorPreference: executor) { [self] in
                    await connection.run()
                    self.state.withLock { state in
                        state.connections[number] = nil
                        state.tasks[number] = nil
                    }
                }
                return .accepted(connection)
            }
            switch admission {
            case .accepted(let connection):
                do {
                    try channel.pipeline.syncOperations.addHandlers([
                        ByteToMessageHandler(LineFrameDecoder(limit: ControlProtocol.maximumRequestLength)),
                        ControlChannelHandler(queue: connection.inbound),
                    ])
                } catch {
                    connection.inbound.finish(discarding: true)
                    return channel.eventLoop.makeFailedFuture(error)
                }
                return channel.eventLoop.makeSucceededVoidFuture()
            case .stopped:
                return channel.close()
            case .full:
                logger.warning("control connection refused: too many connections", metadata: ["control.limit": "\(maximumConnections)"])
                return refuse(channel, ControlError(.tooManyConnections, "this ODRFS daemon already serves \(maximumConnections) control connections; close some and retry"))
            }
        }
    }

    /// Tells a refused peer why, then hangs up.
    private func refuse(_ channel: any Channel, _ error: ControlError) -> EventLoopFuture<Void> {
        do {
            try channel.pipeline.syncOperations.addHandler(RefusalHandler(error))
            return channel.eventLoop.makeSucceededVoidFuture()
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
    }

    /// Connections one user who may not change the mount may hold at once.
    static let connectionsPerOtherUser = 32
    /// Connections kept for the owner and root.
    static let privilegedReserve = 64
}
