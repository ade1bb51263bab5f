import Foundation

/// An origin or mirror URL (`odrfs mount URL`, `--mirror URL`, and the mirrors a manifest
/// from the origin lists), then a path inside it (a pack or index path from the manifest).
/// The input is the URL, a NUL, and the path.
///
/// What is accepted must stay where it points: the URL shown has no userinfo or query and
/// reads back as the same origin, and a file URL built from any path is on that same
/// origin (scheme, host, port), so a path can neither send a request elsewhere nor take
/// the bearer token along. (Dot segments are the callers' to refuse: their paths are
/// `manifest.json`, index and pack names.)
enum OriginURLTarget {
    static func run(_ text: String) {
        let parts = text.split(separator: "\0", maxSplits: 1, omittingEmptySubsequences: false)
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
    }
}
