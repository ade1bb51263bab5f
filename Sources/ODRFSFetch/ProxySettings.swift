import AsyncHTTPClient
import Foundation

/// Which HTTP proxy a mount's requests go through: `--proxy URL`, else the usual
/// `HTTPS_PROXY` / `HTTP_PROXY` / `NO_PROXY` variables (lower-case spellings too), read once
/// by `odrfs mount` and handed to the daemon whole.
///
/// AsyncHTTPClient reaches every origin through a proxy with a `CONNECT` tunnel (for http://
/// too), so a forward proxy passes the traffic but cannot cache it. A shared cache for many
/// mounts is a caching reverse proxy (nginx `proxy_cache`, Squid as an accelerator) that
/// the mounts use as their origin or as a `--mirror`: see the README's site set-up.
public struct ProxySettings: Sendable, Codable, Equatable {
    /// The proxy for http:// origins, as a URL (`http://[user:pass@]host:port`).
    public var http: String?
    /// The proxy for https:// origins.
    public var https: String?
    /// Hosts reached directly: exact names, `.suffix`/`suffix` domain matches, or `*` for all.
    public var noProxy: [String] = []

    public init(http: String? = nil, https: String? = nil, noProxy: [String] = []) {
        self.http = http
        self.https = https
        self.noProxy = noProxy
    }

    /// `--proxy` (for every scheme) if given, else the environment's variables.
    public static func resolve(explicit: String?, environment: [String: String] = ProcessInfo.processInfo.environment) -> ProxySettings {
        func variable(_ name: String) -> String? {
            let value = environment[name.lowercased()] ?? environment[name.uppercased()]
            return value.flatMap { $0.isEmpty ? nil : $0 }
        }
        let noProxy = (variable("NO_PROXY") ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
        if let explicit { return ProxySettings(http: explicit, https: explicit, noProxy: noProxy) }
        return ProxySettings(http: variable("HTTP_PROXY"), https: variable("HTTPS_PROXY"), noProxy: noProxy)
    }

    /// Whether `host` is to be reached without the proxy.
    func bypasses(_ host: String) -> Bool {
        let host = host.lowercased()
        return noProxy.contains { entry in
            if entry == "*" { return true }
            let domain = entry.hasPrefix(".") ? String(entry.dropFirst()) : entry
            return host == domain || host.hasSuffix("." + domain)
        }
    }

    /// AsyncHTTPClient's proxy for an origin at `scheme://host`, or nil for a direct connection.
    func proxy(scheme: String, host: String) throws(FetchError) -> HTTPClient.Configuration.Proxy? {
        guard let text = scheme == "https" ? https : http, !bypasses(host) else { return nil }
        let withScheme = text.contains("://") ? text : "http://" + text
        guard let components = URLComponents(string: withScheme), let proxyHost = components.host, !proxyHost.isEmpty,
              components.scheme?.lowercased() == "http" else {
            throw FetchError(.invalidOrigin, "the proxy '\(Self.redacted(text))' is not an http://host:port URL")
        }
        let port = components.port ?? 80
        // swift-nio traps on a port outside 1-65535.
        guard OriginAddress.validPorts.contains(port) else {
            throw FetchError(.invalidOrigin, "the proxy '\(Self.redacted(text))' has no valid port (1-65535)")
        }
        if let user = components.user {
            let password = components.password ?? ""
            return .server(host: proxyHost, port: port, authorization: .basic(username: user.removingPercentEncoding ?? user,
                                                                              password: password.removingPercentEncoding ?? password))
        }
        return .server(host: proxyHost, port: port)
    }

    /// A proxy URL for messages: the password never shows.
    static func redacted(_ text: String) -> String {
        guard let at = text.lastIndex(of: "@") else { return text }
        let start = text.range(of: "://")?.upperBound ?? text.startIndex
        return String(text[..<start]) + "…@" + String(text[text.index(after: at)...])
    }
}
