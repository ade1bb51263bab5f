/// `ADDR:PORT` as `--metrics` takes it: `127.0.0.1:9464`, `[::1]:9464`, `:9464` (all
/// addresses) or `localhost:9464`.
public struct MetricsAddress: Sendable, Equatable, Codable, CustomStringConvertible {
    public var host: String
    public var port: Int

    /// Parses `ADDR:PORT`; nil if the port is not 0…65535 or the form is wrong.
    ///
    /// The host may hold only what a host name or an IP address (with a `%zone`) holds, so
    /// what is accepted is what ``description`` writes back: a stray bracket (`[[x]]:1`)
    /// or space is refused here, not left for the listener to fail on.
    public init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") && host.count >= 2 { host = String(host.dropFirst().dropLast()) }
        if host.isEmpty { host = "0.0.0.0" }
        guard host.unicodeScalars.allSatisfy(Self.isHostScalar) else { return nil }
        self.host = host
        self.port = port
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    private static func isHostScalar(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9", ".", "-", "_", ":", "%": true
        default: false
        }
    }
}
