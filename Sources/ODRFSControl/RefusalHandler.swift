import NIOCore

/// The only handler of a refused connection: once active, sends one error line and
/// hangs up; whatever the peer sends is ignored.
final class RefusalHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let line: ByteBuffer

    init(_ error: ControlError) {
        var line = ByteBuffer(bytes: ControlProtocol.encode(ControlResponse.failure(nil, error)))
        line.writeInteger(UInt8(ascii: "\n"))
        self.line = line
    }

    func channelActive(context: ChannelHandlerContext) {
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(line)).whenComplete { _ in channel.close(promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
