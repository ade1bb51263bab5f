import AsyncHTTPClient
import NIOCore

extension HTTPOrigin {
    /// Sends one request without following redirects: an http:// URL that a proxy carries
    /// goes to it in absolute form (``ForwardProxyClient``), so that a caching proxy can serve
    /// it; anything else goes through AsyncHTTPClient, directly or (https://) by `CONNECT`.
    func send(_ request: HTTPClientRequest, deadline: NIODeadline) async throws -> HTTPClientResponse {
        if let forwardProxy, forwardProxy.carries(request.url) {
            return try await forwardProxy.execute(url: request.url, headers: request.headers, deadline: deadline)
        }
        return try await client.execute(request, deadline: deadline)
    }

    /// AsyncHTTPClient's proxy: it carries only https:// URLs (anything else through the proxy
    /// goes by ``forwardProxy(for:options:connectTimeout:readTimeout:)``), tunnelled with
    /// `CONNECT` through the https proxy. An http origin needs it only for a redirect to
    /// https://, so a bad https proxy setting does not stop that origin.
    static func tunnelProxy(for address: OriginAddress, options: OriginOptions) throws(FetchError) -> HTTPClient.Configuration.Proxy? {
        guard address.scheme == "https" else { return (try? options.proxy.proxy(scheme: "https", host: address.host)).flatMap { $0 } }
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
