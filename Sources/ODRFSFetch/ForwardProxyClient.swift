import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// Sends http:// requests to a forward proxy in absolute form (`GET http://origin/path
/// HTTP/1.1`), as curl, wget, apt and cvmfs do, so that a caching proxy (a site's Squid)
/// stores the answer and serves every other mount behind it from that copy.
///
/// AsyncHTTPClient cannot do this: it reaches every URL through a proxy with a `CONNECT`
/// tunnel, which a proxy can only pass through, never cache, and which Squid as Debian ships
/// it allows only to port 443. https:// URLs still go that way: what is encrypted end to end
/// cannot be cached on the way.
///
/// Connections are kept alive between requests (a few idle ones, closed after 15 s): a
/// lazy mount makes many small requests, and a connection per request would leave the
/// machine's ephemeral ports in TIME_WAIT. The answer is an `HTTPClientResponse` like
/// AsyncHTTPClient's, so the fetcher's resume, range, verification and retry logic does not
/// know which way a request went, and the errors are the same `HTTPClientError`s and NIO
/// connect errors that ``AttemptFailure/classify(_:url:)`` sorts.
final class ForwardProxyClient: Sendable {
    let endpoint: ProxyEndpoint
    /// For `NO_PROXY`: hosts of http:// URLs that are reached directly.
    private let settings: ProxySettings
    private let group: any EventLoopGroup
    private let connectTimeout: TimeAmount
    /// A response that sends nothing for this long (while its reader wants more) is cut off.
    private let readTimeout: TimeAmount
    /// Kept-alive connections waiting for a request, the most recently used last.
    private let idle = Mutex<[ForwardProxyConnection]>([])
    private let maxIdle: Int
    static let idleTimeout = TimeAmount.seconds(15)

    /// Nil when no proxy is set for http:// URLs.
    init?(settings: ProxySettings, group: any EventLoopGroup, connectTimeout: TimeAmount,
          readTimeout: TimeAmount, maxIdle: Int = 8) throws(FetchError) {
        guard let text = settings.http else { return nil }
        self.endpoint = try ProxyEndpoint(text)
        self.settings = settings
        self.group = group
        self.connectTimeout = connectTimeout
        self.readTimeout = readTimeout
        self.maxIdle = maxIdle
    }

    deinit {
        shutdown()
    }

    /// Closes the idle connections; requests under way end on their own.
    func shutdown() {
        for connection in idle.withLock({ connections in defer { connections = [] }; return connections }) {
            connection.channel.close(promise: nil)
        }
    }

    /// Whether `url` goes through this proxy: an http:// URL whose host `NO_PROXY` does not exempt.
    func carries(_ url: String) -> Bool {
        guard let components = URLComponents(string: url), components.scheme?.lowercased() == "http",
              let host = components.host else { return false }
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        return !settings.bypasses(bare)
    }

    /// GETs `url` (http://) through the proxy; the response's body streams from the connection.
    func execute(url: String, headers: HTTPHeaders, deadline: NIODeadline) async throws -> HTTPClientResponse {
        let head = try Self.requestHead(url: url, headers: headers, proxyAuthorization: endpoint.authorization)
        while let connection = idle.withLock({ $0.popLast() }) {
            guard connection.channel.isActive else { continue }
            do {
                return try await send(head, on: connection, deadline: deadline)
            } catch let error where Self.isStale(error) && !Task.isCancelled {
                // The proxy closed the idle connection as the request went out: nothing of the
                // GET was answered, so it goes again on another connection.
                continue
            }
        }
        return try await send(head, on: try await connect(deadline: deadline), deadline: deadline)
    }

    private func send(_ head: HTTPRequestHead, on connection: ForwardProxyConnection,
                      deadline: NIODeadline) async throws -> HTTPClientResponse {
        let channel = connection.channel
        let promise = channel.eventLoop.makePromise(of: (HTTPResponseHead, ForwardProxyBody).self)
        channel.eventLoop.execute {
            connection.handler.value.begin(promise, request: head, deadline: deadline)
        }
        let (responseHead, body) = try await withTaskCancellationHandler {
            try await promise.futureResult.get()
        } onCancel: {
            channel.close(promise: nil)
        }
        return HTTPClientResponse(version: responseHead.version, status: responseHead.status,
                                  headers: responseHead.headers, body: .stream(body))
    }

    /// A new connection to the proxy, its handler ready for a request.
    private func connect(deadline: NIODeadline) async throws -> ForwardProxyConnection {
        let (readTimeout, idleTimeout) = (readTimeout, Self.idleTimeout)
        let onIdle: @Sendable (ForwardProxyConnection) -> Void = { [weak self] connection in
            guard let self else { return connection.channel.close(promise: nil) }
            self.release(connection)
        }
        let channel = try await ClientBootstrap(group: group)
            .connectTimeout(max(.milliseconds(1), min(connectTimeout, deadline - .now())))
            .channelOption(.autoRead, value: false)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(
                        ForwardProxyResponseHandler(readTimeout: readTimeout, idleTimeout: idleTimeout, onIdle: onIdle))
                }
            }
            .connect(host: endpoint.host, port: endpoint.port).get()
        return try await channel.eventLoop.submit {
            let handler = try channel.pipeline.syncOperations.handler(type: ForwardProxyResponseHandler.self)
            return ForwardProxyConnection(channel: channel, handler: NIOLoopBound(handler, eventLoop: channel.eventLoop))
        }.get()
    }

    /// Keeps a connection whose response ended cleanly for the next request, up to `maxIdle`.
    private func release(_ connection: ForwardProxyConnection) {
        let kept = idle.withLock { connections in
            connections.removeAll { !$0.channel.isActive }
            guard connections.count < maxIdle else { return false }
            connections.append(connection)
            return true
        }
        if !kept { connection.channel.close(promise: nil) }
    }

    /// An idle connection that turned out to be closed (or reset) before any answer.
    private static func isStale(_ error: any Error) -> Bool {
        (error as? HTTPClientError) == .remoteConnectionClosed || error is IOError
            || (error as? ChannelError) == .ioOnClosedChannel
    }

    /// `GET http://host[:port]/path?query HTTP/1.1` with `Host`, the caller's headers and the
    /// proxy's credentials; the URL's userinfo and fragment are never sent.
    static func requestHead(url: String, headers: HTTPHeaders, proxyAuthorization: String?) throws -> HTTPRequestHead {
        guard var components = URLComponents(string: url), components.scheme?.lowercased() == "http",
              let host = components.host, !host.isEmpty else {
            throw HTTPClientError.invalidURL
        }
        (components.user, components.password, components.fragment) = (nil, nil, nil)
        if components.percentEncodedPath.isEmpty { components.percentEncodedPath = "/" }
        guard let target = components.string else { throw HTTPClientError.invalidURL }
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: target, headers: headers)
        head.headers.replaceOrAdd(name: "Host", value: host + (components.port.map { ":\($0)" } ?? ""))
        if let proxyAuthorization { head.headers.replaceOrAdd(name: "Proxy-Authorization", value: proxyAuthorization) }
        return head
    }
}
