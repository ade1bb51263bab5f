import NIOCore

/// Closes a connection whose response writes have not completed for the idle timeout.
///
/// Hummingbird's idle timeout only covers the time between requests: a client that asks for
/// a large pack and then stops reading would hold its connection (and the pack's
/// descriptor) for as long as it likes. Paired with a `NIOCore.IdleStateHandler` that has only a
/// write timeout, which fires when no write has completed for that long; an idle
/// keep-alive connection gets the same event, and closing it is right too.
final class StalledWriteCloser: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let idle = event as? IdleStateHandler.IdleStateEvent, idle == .write {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}
