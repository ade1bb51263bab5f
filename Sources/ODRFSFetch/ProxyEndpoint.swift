import AsyncHTTPClient
import Foundation

/// A forward proxy's address and credentials, parsed once from `--proxy` or a `*_PROXY`
/// variable (`http://[user:pass@]host[:port]`, the scheme optional, port 80 by default).
struct ProxyEndpoint: Sendable, Equatable {
    let host: String
    let port: Int
    /// `Basic …` for `Proxy-Authorization`, when the URL carries a user: never logged.
    let authorization: String?
    private let username: String?
    private let password: String?

    init(_ text: String) throws(FetchError) {
        let withScheme = text.contains("://") ? text : "http://" + text
        guard let components = URLComponents(string: withScheme), let host = components.host, !host.isEmpty,
              components.scheme?.lowercased() == "http" else {
            throw FetchError(.invalidOrigin, "the proxy '\(ProxySettings.redacted(text))' is not an http://host:port URL")
        }
        let port = components.port ?? 80
        guard (1...65535).contains(port) else {
            throw FetchError(.invalidOrigin, "the proxy '\(ProxySettings.redacted(text))' has no valid port")
        }
        self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        self.port = port
        if let user = components.user {
            let username = user.removingPercentEncoding ?? user
            let password = components.password.map { $0.removingPercentEncoding ?? $0 } ?? ""
            self.username = username
            self.password = password
            self.authorization = "Basic " + Data("\(username):\(password)".utf8).base64EncodedString()
        } else {
            (username, password, authorization) = (nil, nil, nil)
        }
    }

    /// The same proxy for AsyncHTTPClient, which reaches every URL through it with `CONNECT`.
    var tunnel: HTTPClient.Configuration.Proxy {
        guard let username else { return .server(host: host, port: port) }
        return .server(host: host, port: port, authorization: .basic(username: username, password: password ?? ""))
    }
}
