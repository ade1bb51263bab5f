/// How to reach an HTTP(S) origin: credentials, trust, patience and connection budget.
/// File origins ignore every field.
public struct OriginOptions: Sendable, Codable {
    /// A file whose first line (trimmed) is sent as `Authorization: Bearer <token>`.
    /// Read once when the origin is created; the token is never logged or put in a message.
    public var tokenFile: String?
    /// A PEM file of CA certificates trusted in addition to the system trust store, for
    /// an origin whose certificate a private CA signed.
    public var caFile: String?
    /// How long one fetch may go without receiving a byte, across all its retries, before it
    /// fails with `.unreachable`. A download that keeps moving is never cut off, however long
    /// it takes; one that stalls or whose origin is down fails after about this long.
    public var fetchDeadline: Duration
    /// The most connections open to the origin at once; further requests queue.
    public var maxConnections: Int

    public init(tokenFile: String? = nil, caFile: String? = nil,
                fetchDeadline: Duration = .seconds(30), maxConnections: Int = 8) {
        self.tokenFile = tokenFile
        self.caFile = caFile
        self.fetchDeadline = fetchDeadline
        self.maxConnections = maxConnections
    }
}
