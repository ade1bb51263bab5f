/// `ADDR:PORT` as `--metrics` takes it: `127.0.0.1:9464`, `[::1]:9464`, `:9464` (all
/// addresses) or `localhost:9464`.
public struct MetricsAddress: Sendable, Equatable, Codable, CustomStringConvertible {
    public var host: String
    public var port: Int

    /// Parses `ADDR:PORT`; nil if the port is not 0…65535 or the form is wrong.
    public init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host.isEmpty { host = "0.0.0.0" }
        guard !host.contains(where: { $0 == " " || $0 == "/" }) else { return nil }
        self.host = host
        self.port = port
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
