import Foundation

/// One origin server as `odrfs status --json` and `odrfs probe --json` show it:
/// `{"url": "...", "reachable": true, "rtt_ms": 21.5, "http_status": 200, "error": null}`.
/// Every key is always present (null when unknown), so scripts can index it blindly.
public struct MirrorEntry: Codable, Sendable, Equatable {
    /// The server's base URL, without credentials or query.
    public var url: String
    /// Whether it answered the last request; false before any answer when it never did.
    public var reachable: Bool
    /// Time to the last response head, in milliseconds.
    public var rttMilliseconds: Double?
    /// The last response's status.
    public var httpStatus: Int?
    /// Why the last request failed, if it did.
    public var error: String?
    /// Failed requests since the mount started (status only; nil in probes).
    public var errors: Int?

    enum CodingKeys: String, CodingKey {
        case url, reachable, error, errors
        case rttMilliseconds = "rtt_ms"
        case httpStatus = "http_status"
    }

    /// A mirror entry.
    public init(url: String, reachable: Bool, rttMilliseconds: Double? = nil, httpStatus: Int? = nil,
                error: String? = nil, errors: Int? = nil) {
        self.url = url
        self.reachable = reachable
        self.rttMilliseconds = rttMilliseconds
        self.httpStatus = httpStatus
        self.error = error
        self.errors = errors
    }

    /// Milliseconds with a tenth's precision, as `rtt_ms` shows them.
    public static func milliseconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        let value = Double(seconds) * 1000 + Double(attoseconds) / 1e15
        return (value * 10).rounded() / 10
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(url, forKey: .url)
        try container.encode(reachable, forKey: .reachable)
        // Explicit nulls: the contract's shape has every key.
        try container.encode(rttMilliseconds, forKey: .rttMilliseconds)
        try container.encode(httpStatus, forKey: .httpStatus)
        try container.encode(error, forKey: .error)
        try container.encodeIfPresent(errors, forKey: .errors)
    }
}
