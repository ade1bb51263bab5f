import NIOCore
import NIOHTTP2

/// Opens an HTTP/2 origin connection's flow-control windows as soon as it is up.
///
/// Why: async-http-client advertises no `SETTINGS_INITIAL_WINDOW_SIZE`, so every response
/// starts with HTTP/2's default 64 KiB stream window (and the connection with 64 KiB);
/// swift-nio-http2 raises a stream's window only once its first DATA frame arrives. Over a
/// 50 ms link a response larger than 64 KiB (a pack's first chunk, a range fetched ahead, a
/// file index) paid about one round trip more — the first 4 KiB of a large file took 1.8×
/// the link's limit over HTTP/2 against 1.2× over HTTP/1.1 (`Benchmarks/wan.py`). Right after
/// the connection's first SETTINGS exchange (async-http-client's connection hook, before
/// any request is sent on it), this sends a SETTINGS frame with an initial stream window of
/// ``streamWindow`` and a WINDOW_UPDATE raising the connection's window by
/// ``connectionWindowIncrement``: a server applies both before the first request's frames,
/// which follow them on the connection.
enum HTTP2Windows {
    /// Each response may have this much in flight: about the bandwidth-delay product of a
    /// 1 Gbit/s, 60 ms link, so one stream is never held back by its window.
    static let streamWindow = 8 << 20
    /// Shared by every response of the connection.
    static let connectionWindowIncrement = 16 << 20

    /// async-http-client's HTTP/2 connection hook. Writes the frames and returns at once:
    /// async-http-client hands the connection to its pool only when this future completes,
    /// and a connection left out of the pool meanwhile (a GOAWAY or a SETTINGS arriving in
    /// that gap) trips the pool's preconditions; a failed future would also leak the
    /// connection. The frames still go out before any request's HEADERS, which are written
    /// after this returns. A write that fails is the connection failing: its requests see it.
    @Sendable static func open(_ channel: Channel) -> EventLoopFuture<Void> {
        let settings = HTTP2Frame(streamID: .rootStream, payload: .settings(.settings([
            HTTP2Setting(parameter: .initialWindowSize, value: streamWindow),
        ])))
        let update = HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: connectionWindowIncrement))
        channel.write(settings, promise: nil)
        channel.writeAndFlush(update, promise: nil)
        return channel.eventLoop.makeSucceededVoidFuture()
    }
}
