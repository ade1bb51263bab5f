import AsyncHTTPClient
import Foundation

/// Which HTTP proxy a mount's requests go through: `--proxy URL`, else the usual
/// `HTTPS_PROXY` / `HTTP_PROXY` / `NO_PROXY` variables (lower-case spellings too), read once
/// by `odrfs mount` and handed to the daemon whole.
///
/// http:// URLs go to the proxy as absolute-form requests (`GET http://origin/path`), as
/// curl, apt and cvmfs send them, so a caching forward proxy (a site's Squid) serves every
/// mount behind it from one copy (``ForwardProxyClient``); https:// URLs go through a
/// `CONNECT` tunnel (AsyncHTTPClient's proxy support), which no proxy can cache.
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

    /// The proxy for a URL at `scheme://host`, or nil for a direct connection.
    func endpoint(scheme: String, host: String) throws(FetchError) -> ProxyEndpoint? {
        guard let text = scheme == "https" ? https : http, !bypasses(host) else { return nil }
        return try ProxyEndpoint(text)
    }

    /// AsyncHTTPClient's proxy (a `CONNECT` tunnel) for an origin at `scheme://host`, or nil
    /// for a direct connection.
    func proxy(scheme: String, host: String) throws(FetchError) -> HTTPClient.Configuration.Proxy? {
        try endpoint(scheme: scheme, host: host)?.tunnel
    }

    /// A proxy URL for messages: the password never shows.
    static func redacted(_ text: String) -> String {
        guard let at = text.lastIndex(of: "@") else { return text }
        let start = text.range(of: "://")?.upperBound ?? text.startIndex
        return String(text[..<start]) + "…@" + String(text[text.index(after: at)...])
    }
}
