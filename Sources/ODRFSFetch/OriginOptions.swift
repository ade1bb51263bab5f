import ODRFSCore

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
    /// A transfer slower than this (bytes per second) makes no progress as far as
    /// `fetchDeadline` is concerned, across attempts, as curl's `--speed-limit` and
    /// CernVM-FS's `CVMFS_LOW_SPEED_LIMIT` do: a server that sends a trickle and stalls on
    /// every attempt would otherwise hold an open, a mount or an update for ever. Zero
    /// counts every byte as progress.
    public var lowSpeedLimit: ByteCount = Self.defaultLowSpeedLimit
    /// 1 KiB/s, as `--low-speed-limit` defaults.
    public static let defaultLowSpeedLimit = ByteCount.kibibytes(1)
    /// The most connections each of the origin's pools opens at once (the main pool, and the
    /// HTTP/1.1 pool of ranges readers wait for: ``RequestLane``); further requests queue.
    public var maxConnections: Int
    /// How long one TCP connect may take. A host that drops packets (no answer at all)
    /// costs this much per attempt.
    public var connectTimeout: Duration = .seconds(2)
    /// How long a fetch keeps retrying while no connection can be made at all (refused,
    /// no route, DNS failure, connect timeout) before it fails with `.unreachable`. Kept
    /// short so that an open fails within 5 s when the origin is down; a server that is
    /// there but slow or stalled gets the whole `fetchDeadline`.
    public var unreachableAfter: Duration = .milliseconds(2500)
    /// The forward proxy to go through (`--proxy` or the environment); none by default.
    public var proxy = ProxySettings()

    public init(tokenFile: String? = nil, caFile: String? = nil,
                fetchDeadline: Duration = .seconds(30), maxConnections: Int = 8) {
        self.tokenFile = tokenFile
        self.caFile = caFile
        self.fetchDeadline = fetchDeadline
        self.maxConnections = maxConnections
    }
}
