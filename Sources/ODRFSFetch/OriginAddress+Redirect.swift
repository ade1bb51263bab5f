import Foundation

extension OriginAddress {
    /// The URL a redirect's `Location` leads to, resolved against the URL that answered and
    /// validated exactly as an origin URL is: http or https, a host a URL can hold, a port
    /// in 1-65535, no credentials. A redirect target is input from a server like any other:
    /// AsyncHTTPClient traps on a port outside 1-65535 (inside swift-nio's `SocketAddress`),
    /// which would take the daemon and every program on the mount down with it, and it also
    /// speaks `http+unix://`, which must never let a server make the daemon talk to a local
    /// socket.
    ///
    /// The result is rebuilt from the validated parts (the fragment dropped), and read back
    /// with Foundation's `URL` (the parser AsyncHTTPClient uses) to check that it names the
    /// same scheme, host and port: a URL two parsers read differently is refused.
    static func redirectTarget(_ location: String, from current: String) throws(FetchError) -> String {
        guard location.utf8.count <= maxRedirectLength,
              let resolved = URL(string: location, relativeTo: URL(string: current))?.absoluteString
        else {
            throw FetchError(.unreachable, "redirect to '\(redacted(location))', which is not a URL")
        }
        let scheme = URLComponents(string: resolved)?.scheme?.lowercased()
        guard scheme == "http" || scheme == "https" else {
            throw FetchError(.unreachable, "redirect to '\(redacted(location))' refused: only http and https redirects are followed")
        }
        let target: OriginAddress
        do {
            target = try OriginAddress(resolved)
        } catch {
            throw FetchError(.unreachable, "redirect to '\(redacted(location))' refused: \(error.message)")
        }
        guard let components = URLComponents(string: resolved) else {
            throw FetchError(.unreachable, "redirect to '\(redacted(location))', which is not a URL")
        }
        let path = components.percentEncodedPath
        guard path.unicodeScalars.allSatisfy({ pathScalars.contains($0) }) else {
            throw FetchError(.unreachable, "redirect to '\(redacted(location))' refused: its path has characters a URL cannot hold")
        }
        let hostPart = target.host.contains(":") ? "[\(target.host)]" : target.host
        let rebuilt = "\(target.scheme)://\(hostPart)\(target.port.map { ":\($0)" } ?? "")"
            + (path.isEmpty ? "/" : path) + (target.query.map { "?" + $0 } ?? "")
        guard let check = URL(string: rebuilt), check.scheme == target.scheme,
              check.host.map(bareHost)?.lowercased() == target.host.lowercased(), check.port == target.port
        else {
            throw FetchError(.unreachable, "redirect to '\(redacted(location))' refused: it reads as two different URLs")
        }
        return rebuilt
    }

    /// Longer `Location`s are refused unread: no legitimate redirect needs more.
    static let maxRedirectLength = 8192

    /// What a percent-encoded path may hold: RFC 3986 path characters and '%'.
    private static let pathScalars: CharacterSet = {
        var allowed = CharacterSet.urlPathAllowed
        allowed.insert("%")
        return allowed
    }()
}
