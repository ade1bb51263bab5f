import AsyncHTTPClient
import NIOCore

extension HTTPOrigin {
    /// Sends one request without following redirects: an http:// URL that a proxy carries
    /// goes to it in absolute form (``ForwardProxyClient``), so that a caching proxy can serve
    /// it; anything else goes through AsyncHTTPClient, directly or (https://) by `CONNECT`,
    /// on the pool of the task's ``RequestLane``.
    func send(_ request: HTTPClientRequest, deadline: NIODeadline) async throws -> HTTPClientResponse {
        if let forwardProxy, forwardProxy.carries(request.url) {
            return try await forwardProxy.execute(url: request.url, headers: request.headers, deadline: deadline)
        }
        let client = RequestLane.current == .reader ? readerClient : self.client
        return try await client.execute(request, deadline: deadline)
    }

    /// AsyncHTTPClient's proxy, which it uses for every URL, with `CONNECT`: the https proxy
    /// for an https origin. An http origin's own requests reach AsyncHTTPClient only when no
    /// proxy carries them (none set, or `NO_PROXY`), and must then go direct: it gets the
    /// https proxy (for redirects to https://) only when its requests go through a proxy too,
    /// and a bad https proxy setting does not stop it.
    static func tunnelProxy(for address: OriginAddress, options: OriginOptions) throws(FetchError) -> HTTPClient.Configuration.Proxy? {
        guard address.scheme == "https" else {
            guard (try? options.proxy.endpoint(scheme: "http", host: address.host)) != nil else { return nil }
            return (try? options.proxy.proxy(scheme: "https", host: address.host)).flatMap { $0 }
        }
        return try options.proxy.proxy(scheme: "https", host: address.host)
    }

    /// The client for http:// URLs when a proxy is set for them. An https origin needs it only
    /// for a redirect to http://, so a bad http proxy setting does not stop that origin.
    static func forwardProxy(for address: OriginAddress, options: OriginOptions, connectTimeout: TimeAmount,
                             readTimeout: TimeAmount) throws(FetchError) -> ForwardProxyClient? {
        let make = { () throws(FetchError) in
            try ForwardProxyClient(settings: options.proxy, group: HTTPClient.defaultEventLoopGroup, connectTimeout: connectTimeout,
                                   readTimeout: readTimeout, maxIdle: max(1, options.maxConnections))
        }
        return address.scheme == "http" ? try make() : (try? make()).flatMap { $0 }
    }
}
