import NIOCore

/// The last handler of an admitted connection's pipeline, on the event loop: hands
/// frames to the connection's ``InboundQueue`` and holds back socket reads while that
/// queue is full (the backpressure of a flooding client).
final class ControlChannelHandler: ChannelDuplexHandler {
    typealias InboundIn = ControlFrame
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let queue: InboundQueue

    init(queue: InboundQueue) {
        self.queue = queue
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        queue.push(unwrapInboundIn(data))
    }

    func read(context: ChannelHandlerContext) {
        if queue.mayRead() { context.read() }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event {
            // The client sent everything it will send: answer what it sent, then close.
            queue.finish(discarding: false)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        queue.finish(discarding: true)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
