import Foundation
import NIOCore
import Synchronization

extension ControlConnection {
    /// How often a watch whose client is not reading looks again whether it may write.
    static let writabilityPoll = Duration.milliseconds(20)
    /// Bytes of events a watch leaves unwritten at most: far below the outbound limit,
    /// so replies to the client's other requests always fit behind them.
    static let eventBacklogLimit = 256 * 1024

    /// Starts a `watch-events`: an ok reply, then every ``MountEvent`` of the service's
    /// hub until `end` or close.
    ///
    /// The client's pace is absorbed by the subscription's bounded queue: while more than
    /// ``eventBacklogLimit`` bytes of events are unwritten (the client is not reading) the
    /// task waits, and meanwhile the queue coalesces progress and drops what does not fit.
    /// Nothing here can block the daemon or grow without bound, and a slow reader is not
    /// disconnected.
    func watchEvents(_ id: Int) throws(ControlError) {
        guard let subscription = service.mountEvents() else {
            throw ControlError(.badRequest, "this daemon does not publish mount events")
        }
        do {
            try state.withLock { state throws(ControlError) in
                try checkUnusedID(id, in: state)
                try checkRoomForWatch(in: state)
                guard !state.closed else {
                    subscription.finish()
                    return
                }
                send(.success(id))
                state.watches[id] = Task(executorPreference: executor) { [self] in
                    defer { subscription.finish() }
                    await forward(subscription, as: id)
                }
            }
        } catch {
            subscription.finish()
            throw error
        }
    }

    private final class Backlog: Sendable {
        let bytes = Atomic<Int>(0)
    }

    private func forward(_ subscription: MountEventSubscription, as id: Int) async {
        let backlog = Backlog()
        while let event = await subscription.next() {
            while backlog.bytes.load(ordering: .relaxed) > Self.eventBacklogLimit {
                guard channel.isActive else { return }
                do {
                    try await Task.sleep(for: Self.writabilityPoll)
                } catch {
                    return   // cancelled: the watch ended
                }
            }
            guard channel.isActive else { return }
            var line = ByteBuffer(bytes: ControlProtocol.encode(ControlResponse.mountEvent(id, event)))
            line.writeInteger(UInt8(ascii: "\n"))
            let buffer = line
            backlog.bytes.add(buffer.readableBytes, ordering: .relaxed)
            let channel = channel
            channel.eventLoop.execute {
                let written = channel.eventLoop.makePromise(of: Void.self)
                written.futureResult.whenComplete { _ in backlog.bytes.subtract(buffer.readableBytes, ordering: .relaxed) }
                channel.writeAndFlush(buffer, promise: written)
            }
        }
    }
}
