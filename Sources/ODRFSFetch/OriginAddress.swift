import Foundation

/// The base URL of an HTTP(S) dist dir, split so that file URLs can be built from it and
/// shown without secrets.
///
/// Credentials in the URL (`https://user:pass@host/`) are refused: the origin argument is
/// on the mount's command line, visible to every user in `ps`; `--token-file` is the way.
/// A query (e.g. a CDN access key) is kept and sent with every request but never shown.
struct OriginAddress: Sendable {
    let scheme: String
    let host: String
    let port: Int?
    /// Percent-encoded path without a trailing slash ("" for the server root).
    let basePath: String
    let query: String?

    init(_ argument: String) throws(FetchError) {
        // URLComponents accepts some control characters (a tab in the path, found by the
        // `bundleconf` fuzz target); no URL sent on the wire may hold one, nor a space.
        guard !argument.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) else {
            throw FetchError(.invalidOrigin, "the URL \(Self.redacted(argument).debugDescription) contains a space or a control character")
        }
        guard let components = URLComponents(string: argument),
              let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = components.host, !host.isEmpty
        else {
            throw FetchError(.invalidOrigin, "not a valid http(s) URL: \(Self.redacted(argument))")
        }
        guard components.user == nil, components.password == nil else {
            throw FetchError(.invalidOrigin, "the origin URL \(Self.redacted(argument)) contains credentials; put a bearer token in a file and pass --token-file instead")
        }
        // The authority as written must be plain ASCII without escapes: URLComponents decodes
        // "%70" and turns a non-ASCII name into punycode, so "h%70О" was accepted as a host that
        // its own display read back as another one (found by the `originurl` fuzz target).
        if let authority = Self.authority(of: argument),
           authority.contains("%") || !authority.unicodeScalars.allSatisfy(\.isASCII) {
            throw FetchError(.invalidOrigin, "not a valid host in \(Self.redacted(argument)) (a host name, IPv4 address or [IPv6] literal; punycode for other names, no %-escapes)")
        }
        // URLComponents percent-decodes the host ("h%20x" is "h x"), which no URL built from
        // it could hold: only a host name or IPv4 address (letters, digits, '.', '-', '_'),
        // or an IPv6 literal in brackets (hex digits, ':', '.'), passes.
        let bare = Self.bareHost(host)
        let isIPv6 = bare != host
        guard !bare.isEmpty, bare.contains(":") == isIPv6,
              bare.unicodeScalars.allSatisfy({ isIPv6 ? Self.isIPv6Scalar($0) : Self.isHostScalar($0) }) else {
            throw FetchError(.invalidOrigin, "not a valid host in \(Self.redacted(argument)) (a host name, IPv4 address or [IPv6] literal; punycode for other names)")
        }
        // A port outside 1-65535 traps inside swift-nio's SocketAddress (a SIGILL that kills the
        // daemon), and one too long for an Int parses as no port at all, silently meaning 80/443.
        if let text = components.string, let range = components.rangeOfPort, !text[range].isEmpty {
            guard let port = components.port, Self.validPorts.contains(port) else {
                throw FetchError(.invalidOrigin, "not a valid port in \(Self.redacted(argument)) (1-65535)")
            }
        }
        self.scheme = scheme
        self.host = bare
        self.port = components.port
        var path = components.percentEncodedPath
        while path.hasSuffix("/") { path.removeLast() }
        self.basePath = path
        self.query = components.percentEncodedQuery.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// What follows `scheme://` up to the path, query or fragment; nil without `://`.
    static func authority(of url: String) -> Substring? {
        guard let separator = url.range(of: "://") else { return nil }
        let rest = url[separator.upperBound...]
        return rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
    }

    /// The ports a URL may name: swift-nio traps on anything else.
    static let validPorts = 1...65535

    /// scheme://host[:port]/path: no userinfo, no query.
    var displayName: String {
        let hostPart = host.contains(":") ? "[\(host)]" : host
        return "\(scheme)://\(hostPart)\(port.map { ":\($0)" } ?? "")\(basePath)"
    }

    /// The URL of `path` (relative to the dist dir), with the base query if any.
    func url(for path: String) -> String {
        let encoded = path.slashSeparated()
            .map { $0.addingPercentEncoding(withAllowedCharacters: Self.segmentCharacters) ?? String($0) }
            .joined(separator: "/")
        return displayName + "/" + encoded + (query.map { "?" + $0 } ?? "")
    }

    /// What messages and logs show for `path`: the URL without the query.
    func displayURL(for path: String) -> String {
        displayName + "/" + path
    }

    /// Whether `url` is on the same scheme, host and port: only there may the token go
    /// (a redirect to a CDN or object store must not carry it along).
    func isSameOrigin(_ url: String) -> Bool {
        guard let other = URLComponents(string: url) else { return false }
        return other.scheme?.lowercased() == scheme && other.host.map(Self.bareHost)?.lowercased() == host.lowercased()
            && (other.port ?? Self.defaultPort(scheme)) == (port ?? Self.defaultPort(scheme))
    }

    /// An IPv6 literal without its brackets: URLComponents keeps them in `host`, and
    /// ``displayName`` adds them back (otherwise URLs read `http://[[::1]]:8080/…`).
    static func bareHost(_ host: String) -> String {
        host.count >= 2 && host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }

    private static func isHostScalar(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9", ".", "-", "_": true
        default: false
        }
    }

    private static func isIPv6Scalar(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."f", "A"..."F", "0"..."9", ":", ".": true
        default: false
        }
    }

    private static func defaultPort(_ scheme: String) -> Int {
        scheme == "https" ? 443 : 80
    }

    private static let segmentCharacters: CharacterSet = {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/?#;")
        return allowed
    }()

    /// The argument with any userinfo and query replaced, for error messages.
    static func redacted(_ argument: String) -> String {
        guard var components = URLComponents(string: argument) else { return "(unparseable URL)" }
        if components.user != nil || components.password != nil {
            components.user = "***"
            components.password = nil
        }
        if components.query != nil { components.query = "***" }
        return components.string ?? "(unparseable URL)"
    }
}
