import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// Sends http:// requests to a forward proxy in absolute form (`GET http://origin/path
/// HTTP/1.1`), as curl, wget, apt and cvmfs do, so that a caching proxy (a site's Squid)
/// stores the answer and serves every other mount behind it from that copy.
///
/// AsyncHTTPClient cannot do this: it reaches every URL through a proxy with a `CONNECT`
/// tunnel, which a proxy can only pass through, never cache, and which Squid as Debian ships
/// it allows only to port 443. https:// URLs still go that way: what is encrypted end to end
/// cannot be cached on the way.
///
/// One connection per request, closed when the response ends or its reader stops: a proxy
/// sits near the mounts, so a connect costs little next to what it saves. The answer is an
/// `HTTPClientResponse` like AsyncHTTPClient's, so the fetcher's resume, range, verification
/// and retry logic does not know which way a request went, and the errors are the same
/// `HTTPClientError`s and NIO connect errors that ``AttemptFailure/classify(_:url:)`` sorts.
final class ForwardProxyClient: Sendable {
    let endpoint: ProxyEndpoint
    /// For `NO_PROXY`: hosts of http:// URLs that are reached directly.
    private let settings: ProxySettings
    private let group: any EventLoopGroup
    private let connectTimeout: TimeAmount
    /// A response that sends nothing for this long (while its reader wants more) is cut off.
    private let readTimeout: TimeAmount

    /// Nil when no proxy is set for http:// URLs.
    init?(settings: ProxySettings, group: any EventLoopGroup, connectTimeout: TimeAmount,
          readTimeout: TimeAmount) throws(FetchError) {
        guard let text = settings.http else { return nil }
        self.endpoint = try ProxyEndpoint(text)
        self.settings = settings
        self.group = group
        self.connectTimeout = connectTimeout
        self.readTimeout = readTimeout
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
        let eventLoop = group.next()
        let promise = eventLoop.makePromise(of: (HTTPResponseHead, ForwardProxyBody).self)
        let readTimeout = readTimeout
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: eventLoop)
                .connectTimeout(max(.milliseconds(1), min(connectTimeout, deadline - .now())))
                .channelOption(.autoRead, value: false)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        try channel.pipeline.syncOperations.addHandler(ForwardProxyResponseHandler(head: promise, readTimeout: readTimeout))
                    }
                }
                .connect(host: endpoint.host, port: endpoint.port).get()
        } catch {
            promise.fail(error)
            throw error
        }
        let deadlineTask = channel.eventLoop.scheduleTask(deadline: deadline) {
            channel.pipeline.fireUserInboundEventTriggered(ForwardProxyResponseHandler.DeadlinePassed())
        }
        channel.closeFuture.whenComplete { _ in deadlineTask.cancel() }
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        let (responseHead, body) = try await withTaskCancellationHandler {
            try await promise.futureResult.get()
        } onCancel: {
            channel.close(promise: nil)
        }
        return HTTPClientResponse(version: responseHead.version, status: responseHead.status,
                                  headers: responseHead.headers, body: .stream(body))
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
