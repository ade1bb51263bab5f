import AsyncHTTPClient
import NIOCore
import NIOHTTP1

/// A response body from the forward proxy: chunks as they arrive, never more than a few
/// ahead of the reader.
typealias ForwardProxyBody = NIOThrowingAsyncSequenceProducer<
    ByteBuffer, any Error, NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark, ForwardProxyBodyDelegate
>

/// A kept-alive connection to the forward proxy and its handler (used on its event loop only).
struct ForwardProxyConnection: Sendable {
    let channel: any Channel
    let handler: NIOLoopBound<ForwardProxyResponseHandler>
}

/// The reader's side of one response body: asks the connection for more bytes when the
/// reader has used what it had, and says when the reader stops (done, cancelled or dropped).
/// `request` tells the connection's later requests apart from this one.
///
/// Both always arrive as a later task on the event loop, never inside the call that caused
/// them: the handler itself finishes or drops a body while it changes its state, and a
/// synchronous event would re-enter it in the middle of that change.
struct ForwardProxyBodyDelegate: NIOAsyncSequenceProducerDelegate {
    let channel: any Channel
    let request: Int

    func produceMore() {
        let (channel, event) = (channel, ForwardProxyResponseHandler.ReadMore(request: request))
        channel.eventLoop.execute { channel.pipeline.fireUserInboundEventTriggered(event) }
    }

    func didTerminate() {
        let (channel, event) = (channel, ForwardProxyResponseHandler.ReaderGone(request: request))
        channel.eventLoop.execute { channel.pipeline.fireUserInboundEventTriggered(event) }
    }
}

/// The last handler of a connection to the forward proxy: sends one request at a time
/// (``begin(_:request:deadline:)``), hands the response head to the waiting request, then
/// streams the body with back-pressure (`autoRead` is off, so the socket is read only while
/// the reader wants more; a pack that arrives faster than the disk takes it is never
/// buffered whole). A response that ends cleanly on a keep-alive connection gives the
/// connection back (`onIdle`); every other way a response ends (the peer closing, an error,
/// a read stall, the deadline, a reader that stops early) fails whichever side waits,
/// exactly once, and closes the connection.
final class ForwardProxyResponseHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias HeadPromise = EventLoopPromise<(HTTPResponseHead, ForwardProxyBody)>

    /// The reader of `request`'s body wants more chunks.
    struct ReadMore: Sendable { let request: Int }
    /// The reader of `request`'s body is gone: finished, cancelled or dropped.
    struct ReaderGone: Sendable { let request: Int }

    private enum State {
        /// Between requests; a read is pending so that the proxy closing it is noticed.
        case idle
        /// The body sequence waits here until the head arrives, then goes to the reader.
        case awaitingHead(HeadPromise, ForwardProxyBody.NewSequence)
        case streaming(ForwardProxyBody.Source, keepAlive: Bool)
        case closed
    }

    private var state = State.idle
    /// Numbers the connection's requests, so that a late event of an earlier one is ignored.
    private var request = 0
    /// The reader has enough chunks: no read until it asks (INVARIANT: no read is pending while set).
    private var paused = false
    /// How long a read may go unanswered before the response counts as stalled.
    private let readTimeout: TimeAmount
    /// How long the connection may wait for its next request.
    private let idleTimeout: TimeAmount
    /// Armed while a read of a response is pending, so that a reader busy with its chunks
    /// (the socket not read on purpose) is never mistaken for a stalled proxy.
    private var readTimer: Scheduled<Void>?
    private var deadlineTimer: Scheduled<Void>?
    private var idleTimer: Scheduled<Void>?
    private var context: ChannelHandlerContext?
    private let onIdle: @Sendable (ForwardProxyConnection) -> Void

    init(readTimeout: TimeAmount, idleTimeout: TimeAmount, onIdle: @escaping @Sendable (ForwardProxyConnection) -> Void) {
        self.readTimeout = readTimeout
        self.idleTimeout = idleTimeout
        self.onIdle = onIdle
    }

    /// Sends `head` (a GET, no body) and answers `promise` with the response's head and body.
    func begin(_ promise: HeadPromise, request head: HTTPRequestHead, deadline: NIODeadline) {
        guard let context, case .idle = state else {
            return promise.fail(HTTPClientError.remoteConnectionClosed)
        }
        request += 1
        idleTimer?.cancel()
        paused = false
        let body = ForwardProxyBody.makeSequence(
            backPressureStrategy: .init(lowWatermark: 1, highWatermark: 4), finishOnDeinit: false,
            delegate: ForwardProxyBodyDelegate(channel: context.channel, request: request))
        state = .awaitingHead(promise, body)
        deadlineTimer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            end(with: HTTPClientError.deadlineExceeded, context: context)
        }
        context.write(NIOAny(HTTPClientRequestPart.head(head)), promise: nil)
        context.writeAndFlush(NIOAny(HTTPClientRequestPart.end(nil)), promise: nil)
        read(context: context)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        // A connection that failed before it was active never saw channelInactive.
        fail(with: ChannelError.ioOnClosedChannel)
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        context.read()
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        readTimer?.cancel()
        switch (unwrapInboundIn(data), state) {
        case (.head(let head), .awaitingHead(let promise, let body)):
            // 1xx answers (100 Continue, 103 Early Hints) precede the real one.
            guard head.status.code >= 200 else { return }
            state = .streaming(body.source, keepAlive: head.isKeepAlive)
            promise.succeed((head, body.sequence))
        case (.body(let chunk), .streaming(let source, _)):
            switch source.yield(chunk) {
            case .produceMore: break
            case .stopProducing: paused = true
            case .dropped: end(with: CancellationError(), context: context)
            }
        case (.end, .streaming(let source, let keepAlive)):
            deadlineTimer?.cancel()
            guard keepAlive else {
                state = .closed
                source.finish()
                return context.close(promise: nil)
            }
            state = .idle
            paused = false
            context.read()
            idleTimer = context.eventLoop.assumeIsolated().scheduleTask(in: idleTimeout) { [self] in
                end(with: ChannelError.ioOnClosedChannel, context: context)
            }
            // Back in the pool before the reader learns that the body ended: its next request
            // (begun on this event loop, so after this) finds the connection there.
            onIdle(ForwardProxyConnection(channel: context.channel, handler: NIOLoopBound(self, eventLoop: context.eventLoop)))
            source.finish()
        case (_, .idle):
            // Bytes nobody asked for: the connection cannot be trusted with another request.
            end(with: HTTPClientError.remoteConnectionClosed, context: context)
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if !paused, isAnswering { read(context: context) }
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case let more as ReadMore:
            if more.request == request, paused, isAnswering {
                paused = false
                read(context: context)
            }
        case let gone as ReaderGone:
            // A reader that stops before the end leaves the rest of the body on the wire.
            if gone.request == request, case .streaming = state {
                end(with: CancellationError(), context: context)
            }
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

    /// A request is waiting for its head or its body.
    private var isAnswering: Bool {
        switch state {
        case .awaitingHead, .streaming: true
        case .idle, .closed: false
        }
    }

    /// Fails whichever side waits (the head's promise or the body's reader) and closes the connection.
    private func end(with error: any Error, context: ChannelHandlerContext) {
        if fail(with: error) { context.close(promise: nil) }
    }

    /// Fails whichever side waits and stops the timers; false if the connection was already closed.
    @discardableResult
    private func fail(with error: any Error) -> Bool {
        switch state {
        case .idle:
            break
        case .awaitingHead(let promise, let body):
            // The body never reached a reader; its source must still be finished (NIO checks).
            body.source.finish()
            promise.fail(error)
        case .streaming(let source, _):
            source.finish(error)
        case .closed:
            return false
        }
        state = .closed
        for timer in [readTimer, deadlineTimer, idleTimer] { timer?.cancel() }
        return true
    }
}
