import Foundation

/// An origin or mirror URL (`odrfs mount URL`, `--mirror URL`, and the mirrors a manifest
/// from the origin lists), then a path inside it (a pack or index path from the manifest).
/// The input is the URL, a NUL, the path, and optionally a NUL and a redirect's
/// `Location` answered for that path's URL.
///
/// What is accepted must stay where it points: the URL shown has no userinfo or query and
/// reads back as the same origin, and a file URL built from any path is on that same
/// origin (scheme, host, port), so a path can neither send a request elsewhere nor take
/// the bearer token along. (Dot segments are the callers' to refuse: their paths are
/// `manifest.json`, index and pack names.)
///
/// A redirect target that is followed must be one an origin URL could be: http(s), a
/// port in 1-65535 (swift-nio traps on any other), no userinfo, and Foundation's `URL`
/// (what AsyncHTTPClient parses it with) must read the same host and port.
enum OriginURLTarget {
    static func run(_ text: String) {
        let parts = text.split(separator: "\0", maxSplits: 2, omittingEmptySubsequences: false)
        let argument = String(parts[0])
        _ = OriginAddress.redacted(argument)
        guard let address = try? OriginAddress(argument) else { return }
        let components = URLComponents(string: address.displayName)
        check(components?.user == nil && components?.password == nil && components?.query == nil,
              "\(argument.debugDescription) shows as \(address.displayName.debugDescription), with a secret")
        let shown = try? OriginAddress(address.displayName)
        check(shown?.host == address.host && shown?.port == address.port && shown?.basePath == address.basePath,
              "\(argument.debugDescription) shows as \(address.displayName.debugDescription), which reads back as another origin")
        let path = parts.count > 1 ? String(parts[1]) : "manifest.json"
        let url = address.url(for: path)
        check(address.isSameOrigin(url), "path \(path.debugDescription) under \(argument.debugDescription) gave \(url.debugDescription), off the origin")
        if parts.count > 2 { checkRedirect(String(parts[2]), from: url) }
    }

    static func checkRedirect(_ location: String, from url: String) {
        guard let target = try? OriginAddress.redirectTarget(location, from: url) else { return }
        let parsed = URL(string: target)
        let components = URLComponents(string: target)
        check(components?.user == nil && components?.password == nil,
              "redirect \(location.debugDescription) is followed to \(target.debugDescription), with credentials")
        check(parsed?.scheme == "http" || parsed?.scheme == "https",
              "redirect \(location.debugDescription) is followed to \(target.debugDescription), not http(s)")
        check(parsed?.port.map { OriginAddress.validPorts.contains($0) } ?? true,
              "redirect \(location.debugDescription) is followed to \(target.debugDescription), whose port traps swift-nio")
        let again = try? OriginAddress(target)
        check(again != nil && again?.port == parsed?.port && again?.host.lowercased() == parsed?.host.map { $0.hasPrefix("[") ? String($0.dropFirst().dropLast()) : $0 }?.lowercased(),
              "redirect \(location.debugDescription) is followed to \(target.debugDescription), which reads as another origin")
    }
}
