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
}
