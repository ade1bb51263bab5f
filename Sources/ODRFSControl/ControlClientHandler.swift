import NIOCore

/// The client side's pipeline end, on the event loop: lines to the router, and the
/// end of the connection to every waiting call.
final class ControlClientHandler: ChannelInboundHandler {
    typealias InboundIn = ControlFrame

    private let router: ControlClientRouter

    init(router: ControlClientRouter) {
        self.router = router
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .line(let line):
            if let error = router.receive(line) {
                router.finish(error)
                context.close(promise: nil)
            }
        case .oversized:
            router.finish(ControlError(.internalError, "the daemon sent a message over \(ControlProtocol.maximumResponseLength) bytes"))
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        router.finish(ControlError(.notRunning, "the ODRFS daemon closed the connection (the mount was unmounted or its daemon stopped)"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
