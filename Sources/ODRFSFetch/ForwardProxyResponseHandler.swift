import AsyncHTTPClient
import NIOCore
import NIOHTTP1

/// A response body from the forward proxy: chunks as they arrive, never more than a few
/// ahead of the reader.
typealias ForwardProxyBody = NIOThrowingAsyncSequenceProducer<
    ByteBuffer, any Error, NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark, ForwardProxyBodyDelegate
>

/// The reader's side of a body: asks the connection for more bytes when the reader has used
/// what it had, and closes the connection when the reader stops (done, cancelled or dropped).
struct ForwardProxyBodyDelegate: NIOAsyncSequenceProducerDelegate {
    let channel: any Channel

    func produceMore() {
        channel.pipeline.fireUserInboundEventTriggered(ForwardProxyResponseHandler.ReadMore())
    }

    func didTerminate() {
        channel.close(promise: nil)
    }
}

/// The last handler of a connection to the forward proxy, which carries one request: hands
/// the response head to the waiting request, then streams the body with back-pressure
/// (`autoRead` is off, so the socket is read only while the reader wants more; a pack that
/// arrives faster than the disk takes it is never buffered whole). Every way the response
/// can end (its end, the peer closing, an error, a read stall, the deadline) ends the body
/// or the head's promise exactly once and closes the connection.
final class ForwardProxyResponseHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart

    /// The reader wants more chunks (from ``ForwardProxyBodyDelegate``).
    struct ReadMore: Sendable {}
    /// The request's deadline passed: the reader gets `HTTPClientError.deadlineExceeded`.
    struct DeadlinePassed: Sendable {}

    private enum State {
        /// The body sequence waits here until the head arrives, then goes to the reader.
        case awaitingHead(ForwardProxyBody.NewSequence?)
        case streaming(ForwardProxyBody.Source)
        case finished
    }

    private let head: EventLoopPromise<(HTTPResponseHead, ForwardProxyBody)>
    private var state = State.awaitingHead(nil)
    /// The reader has enough chunks: no read until it asks (INVARIANT: no read is pending while set).
    private var paused = false
    /// How long a read may go unanswered before the response counts as stalled.
    private let readTimeout: TimeAmount
    /// Armed while a read is pending, so that a reader busy with its chunks (the socket not
    /// read on purpose) is never mistaken for a stalled proxy.
    private var readTimer: Scheduled<Void>?

    init(head: EventLoopPromise<(HTTPResponseHead, ForwardProxyBody)>, readTimeout: TimeAmount) {
        self.head = head
        self.readTimeout = readTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        // A few chunks (each up to one socket read) may wait for the reader; the connection
        // reads again once the reader has taken all but one.
        state = .awaitingHead(ForwardProxyBody.makeSequence(
            backPressureStrategy: .init(lowWatermark: 1, highWatermark: 4), finishOnDeinit: false,
            delegate: ForwardProxyBodyDelegate(channel: context.channel)))
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        // A connection that failed before it was active never saw channelInactive; the
        // pipeline is going away, so there is nothing to close.
        fail(with: ChannelError.ioOnClosedChannel)
    }

    func channelActive(context: ChannelHandlerContext) {
        read(context: context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        readTimer?.cancel()
        switch (unwrapInboundIn(data), state) {
        case (.head(let responseHead), .awaitingHead(let sequence)):
            // 1xx answers (100 Continue, 103 Early Hints) precede the real one.
            guard responseHead.status.code >= 200, let sequence else { return }
            state = .streaming(sequence.source)
            head.succeed((responseHead, sequence.sequence))
        case (.body(let chunk), .streaming(let source)):
            switch source.yield(chunk) {
            case .produceMore: break
            case .stopProducing: paused = true
            case .dropped: end(with: CancellationError(), context: context)
            }
        case (.end, .streaming(let source)):
            state = .finished
            source.finish()
            context.close(promise: nil)
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if !paused, !isFinished { read(context: context) }
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case is ReadMore:
            if paused, !isFinished {
                paused = false
                read(context: context)
            }
        case is DeadlinePassed:
            end(with: HTTPClientError.deadlineExceeded, context: context)
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        end(with: error, context: context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        end(with: HTTPClientError.remoteConnectionClosed, context: context)
        context.fireChannelInactive()
    }

    private func read(context: ChannelHandlerContext) {
        context.read()
        readTimer?.cancel()
        readTimer = context.eventLoop.assumeIsolated().scheduleTask(in: readTimeout) { [self] in
            end(with: HTTPClientError.readTimeout, context: context)
        }
    }

    private var isFinished: Bool {
        if case .finished = state { return true }
        return false
    }

    /// Fails whichever side waits (the head's promise or the body's reader) and closes the connection.
    private func end(with error: any Error, context: ChannelHandlerContext) {
        if fail(with: error) { context.close(promise: nil) }
    }

    /// Fails whichever side waits; false if the response had already ended.
    @discardableResult
    private func fail(with error: any Error) -> Bool {
        switch state {
        case .awaitingHead(let sequence):
            // The body never reached a reader; its source must still be finished (NIO checks).
            sequence?.source.finish()
            head.fail(error)
        case .streaming(let source): source.finish(error)
        case .finished: return false
        }
        state = .finished
        readTimer?.cancel()
        return true
    }
}
