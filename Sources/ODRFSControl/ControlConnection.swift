import Foundation
import Logging
import Synchronization

/// One client of the ``ControlServer``: reads its requests in order and answers them.
///
/// Invariants (under `state`): every token a `request` obtained is either in `held`
/// (handed back to the service by `end` or by teardown) or was already handed back;
/// once `closed` is set nothing is added to `held`, `inFlight` or `watches`, so a
/// request finishing after the client vanished releases its token itself.
final class ControlConnection: Sendable {
    let socket: UnixSocket
    let number: UInt64
    let service: any ControlService
    let logger: Logger
    let writer: LineWriter
    let state = Mutex(State())

    struct State {
        var closed = false
        /// Retains of successful requests, by request id.
        var held: [Int: RetainToken] = [:]
        /// Requests waiting for downloads, by request id.
        var inFlight: [Int: Task<Void, Never>] = [:]
        /// `watch-disk` subscriptions, by request id.
        var watches: [Int: Task<Void, Never>] = [:]
    }

    init(socket: UnixSocket, number: UInt64, service: any ControlService, logger: Logger) {
        self.socket = socket
        self.number = number
        self.service = service
        var logger = logger
        logger[metadataKey: "control.connection"] = "\(number)"
        self.logger = logger
        writer = LineWriter(socket: socket, name: "odrfs-control-write-\(number)")
    }

    /// Serves until the client hangs up (or is disconnected), then releases
    /// everything the connection holds and closes the socket.
    func run() async {
        logger.debug("control connection opened")
        let lines = LineReader.lines(from: socket, limit: ControlProtocol.maximumRequestLength, name: "odrfs-control-read-\(number)")
        for await item in lines {
            switch item {
            case .line(let line):
                await handle(line)
            case .oversized:
                logger.warning("control message over the size limit; disconnecting", metadata: ["control.limit": "\(ControlProtocol.maximumRequestLength)"])
                send(.failure(nil, ControlError(.badRequest, "message longer than \(ControlProtocol.maximumRequestLength) bytes; closing the connection")))
                await writer.finish(shutdown: true)
            }
        }
        await teardown()
        await writer.finish(shutdown: true)
        socket.close()
        logger.debug("control connection closed")
    }

    /// Hangs up on the client; `run` then tears down.
    func disconnect() {
        socket.shutdown()
    }

    func send(_ response: ControlResponse) {
        writer.send(ControlProtocol.encode(response))
    }

    private func handle(_ line: Data) async {
        if line.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\r") || $0 == UInt8(ascii: "\t") }) { return }
        let request: ControlRequest
        switch ControlProtocol.decodeRequest(line) {
        case .success(let decoded):
            request = decoded
        case .failure(let failure):
            logger.debug("bad control message", metadata: ["error": "\(failure.error.message)"])
            send(.failure(failure.id, failure.error))
            return
        }
        let id = request.id
        do throws(ControlError) {
            switch request.operation {
            case .status:
                var reply = ControlResponse.success(id)
                reply.status = await service.status()
                send(reply)
            case let .request(tags, loadingPriority, conditional):
                try beginRequest(id, tags: tags, loadingPriority: loadingPriority, conditional: conditional)
            case .end(let target):
                try end(target)
                send(.success(id))
            case .cancel(let target):
                let task = state.withLock { $0.inFlight[target] }
                guard let task else { throw ControlError(.badRequest, "no request \(target) is in progress on this connection") }
                task.cancel()
                send(.success(id))
            case .priorityGet(let tags):
                var reply = ControlResponse.success(id)
                reply.priorities = try service.preservationPriorities(tags: tags)
                send(reply)
            case let .prioritySet(tags, value):
                try service.setPreservationPriority(value, tags: tags)
                send(.success(id))
            case .purge(let tags):
                var reply = ControlResponse.success(id)
                reply.purge = try await service.purge(tags: tags)
                send(reply)
            case .watchDisk:
                try watchDisk(id)
            }
        } catch {
            send(.failure(id, error))
        }
    }

    private func end(_ target: Int) throws(ControlError) {
        let (token, task, watch) = state.withLock { state in
            (state.held.removeValue(forKey: target), state.inFlight[target], state.watches.removeValue(forKey: target))
        }
        if let token {
            service.endAccessing(token)
        } else if let task {
            task.cancel()   // it replies `cancelled` and releases whatever it got
        } else if let watch {
            watch.cancel()
        } else {
            throw ControlError(.badRequest, "no request \(target) is held or in progress on this connection")
        }
    }

    private func watchDisk(_ id: Int) throws(ControlError) {
        try state.withLock { state throws(ControlError) in
            try checkUnusedID(id, in: state)
            guard !state.closed else { return }
            send(.success(id))
            let events = service.lowDiskSpaceEvents()
            state.watches[id] = Task { [self] in
                for await event in events {
                    send(.lowDiskSpace(id, event))
                }
            }
        }
    }

    /// Releases everything: cancels requests in flight (each releases what it got),
    /// stops watches and ends every held request.
    private func teardown() async {
        let (held, inFlight, watches) = state.withLock { state in
            state.closed = true
            defer {
                state.held.removeAll()
                state.watches.removeAll()
            }
            return (Array(state.held.values), Array(state.inFlight.values), Array(state.watches.values))
        }
        inFlight.forEach { $0.cancel() }
        watches.forEach { $0.cancel() }
        held.forEach(service.endAccessing)
        if !held.isEmpty || !inFlight.isEmpty {
            logger.info("control client gone: released its requests", metadata: ["requests.held": "\(held.count)", "requests.cancelled": "\(inFlight.count)"])
        }
        for task in inFlight { await task.value }
    }
}
