import Foundation
import Logging
import NIOCore
import Synchronization

/// One client of the ``ControlServer``: handles its requests in order and answers them.
///
/// Its frames arrive through an ``InboundQueue`` from the channel's handler; ``run()``
/// runs as a task on the server's ``ServiceExecutor`` (never on the event loop), so it
/// may call the service directly. Replies are encoded here and written on the event
/// loop; nothing ever waits for the client to read.
///
/// Invariants (under `state`): every token a `request` obtained is either in `held`
/// (handed back to the service by `end` or by teardown) or was already handed back;
/// once `closed` is set nothing is added to `held`, `inFlight` or `watches`, so a
/// request finishing after the client vanished releases its token itself.
final class ControlConnection: Sendable {
    let channel: any Channel
    let number: UInt64
    let service: any ControlService
    let executor: ServiceExecutor
    let inbound: InboundQueue
    let logger: Logger
    /// The peer's uid (SO_PEERCRED) and whether it may change the mount (``ControlAccess``).
    let peer: UInt32
    let mayChange: Bool
    /// ``ControlServer/afterLargeReply``.
    let afterLargeReply: (@Sendable () -> Void)?
    let state = Mutex(State())

    struct State {
        var closed = false
        /// Retains of successful requests, by request id.
        var held: [Int: RetainToken] = [:]
        /// Requests waiting for downloads, by request id.
        var inFlight: [Int: Task<Void, Never>] = [:]
        /// `watch-disk` subscriptions, by request id.
        var watches: [Int: Task<Void, Never>] = [:]
        /// A refused change was logged (once per connection).
        var refusalLogged = false
    }

    init(channel: any Channel, number: UInt64, service: any ControlService, executor: ServiceExecutor, logger: Logger,
         peer: UInt32 = 0, mayChange: Bool = true, afterLargeReply: (@Sendable () -> Void)? = nil) {
        self.afterLargeReply = afterLargeReply
        self.peer = peer
        self.mayChange = mayChange
        self.channel = channel
        self.number = number
        self.service = service
        self.executor = executor
        inbound = InboundQueue { [channel] in channel.read() }
        var logger = logger
        logger[metadataKey: "control.connection"] = "\(number)"
        self.logger = logger
    }

    /// Serves until the client hangs up (or is disconnected), then releases
    /// everything the connection holds and closes the channel.
    func run() async {
        logger.debug("control connection opened")
        reading: while let frame = await inbound.next() {
            switch frame {
            case .line(let line):
                await handle(Data(line.readableBytesView))
            case .oversized:
                logger.warning("control message over the size limit; disconnecting", metadata: ["control.limit": "\(ControlProtocol.maximumRequestLength)"])
                send(.failure(nil, ControlError(.badRequest, "message longer than \(ControlProtocol.maximumRequestLength) bytes; closing the connection")))
                break reading
            }
        }
        await teardown()
        closeAfterPendingWrites()
        logger.debug("control connection closed")
    }

    /// Hangs up on the client; `run` then tears down.
    func disconnect() {
        channel.close(promise: nil)
    }

    /// Queues `response` for the client, in order with every earlier send. A client so
    /// far behind that the channel is no longer writable (8 MiB waiting) is disconnected,
    /// except that a `droppable` message (a progress event, which a later one supersedes)
    /// is just skipped.
    func send(_ response: ControlResponse, droppable: Bool = false) {
        var line = ByteBuffer(bytes: ControlProtocol.encode(response))
        line.writeInteger(UInt8(ascii: "\n"))
        let buffer = line
        if channel.eventLoop.inEventLoop {
            write(buffer, droppable: droppable)
        } else {
            channel.eventLoop.execute { [self] in write(buffer, droppable: droppable) }
        }
    }

    /// On the event loop.
    private func write(_ buffer: ByteBuffer, droppable: Bool) {
        // A large reply dropped (the client left while it was built) is memory freed all the same.
        let large = buffer.readableBytes >= ControlServer.largeReplyBytes
        guard channel.isActive else {
            if large { afterLargeReply?() }
            return
        }
        guard channel.isWritable else {
            if large { afterLargeReply?() }
            guard !droppable else { return }
            logger.warning("control client is not reading its replies; disconnecting", metadata: ["control.limit": "\(ControlServer.outboundLimit)"])
            channel.close(promise: nil)
            return
        }
        guard large, let afterLargeReply else {
            channel.writeAndFlush(buffer, promise: nil)
            return
        }
        // Once the kernel has it (or the write failed): until then the encoded reply is held.
        channel.writeAndFlush(buffer).whenComplete { _ in afterLargeReply() }
    }

    /// Closes the channel once every reply sent so far is written.
    private func closeAfterPendingWrites() {
        let channel = channel
        channel.eventLoop.execute {
            guard channel.isActive else { return }
            channel.writeAndFlush(ByteBuffer()).whenComplete { _ in channel.close(promise: nil) }
        }
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
            if request.operation.changesTheMount && !mayChange {
                // Once per connection: another user must not be able to flood root's log.
                if state.withLock({ state in defer { state.refusalLogged = true }; return !state.refusalLogged }) {
                    logger.notice("control request refused: only the mount's owner and root may change it", metadata: ["operation": "\(request.operation.name)"])
                }
                throw ControlError(.permissionDenied, "permission denied: only the user who mounted and root may \(request.operation.name) this mount; every local user may read its status and request tags")
            }
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
                try await service.setPreservationPriority(value, tags: tags)
                send(.success(id))
            case .purge(let tags):
                var reply = ControlResponse.success(id)
                reply.purge = try await service.purge(tags: tags)
                send(reply)
            case .watchDisk:
                try watchDisk(id)
            case .update(let check):
                var reply = ControlResponse.success(id)
                reply.update = try await service.update(check: check)
                send(reply)
            case .watchEvents:
                try watchEvents(id)
            case .trace(let sessions):
                var reply = ControlResponse.success(id)
                reply.trace = try await service.trace(sessions: sessions)
                send(reply)
            case .variant(let preferences):
                var reply = ControlResponse.success(id)
                reply.variant = try await service.switchVariants(to: preferences)
                send(reply)
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
            try checkRoomForWatch(in: state)
            guard !state.closed else { return }
            send(.success(id))
            let events = service.lowDiskSpaceEvents()
            state.watches[id] = Task(executorPreference: executor) { [self] in
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
        // Awaited so that nothing sends on this channel, or runs on the server's threads,
        // after `ControlServer.stop()` has returned.
        for task in inFlight { await task.value }
        for task in watches { await task.value }
    }
}
