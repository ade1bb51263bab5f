import NIOCore

/// How many connections `odrfs serve` holds at once and how long one may make no progress.
///
/// Without these, a client that opens connections and sends nothing keeps a descriptor each
/// forever: enough of them exhaust `RLIMIT_NOFILE`, the server can no longer open the files
/// it serves, and every fetcher is cut off. Each connection costs at most two descriptors
/// (its socket and the file it streams), so the default cap of 256 stays well inside the
/// usual soft limit of 1024.
public struct ConnectionLimits: Sendable, Equatable {
    /// Connections accepted at once; further clients wait in the listen backlog (they are
    /// not refused) until one closes.
    public var maxConnections: Int
    /// A connection is closed when it has had no request for this long, when a request's
    /// head takes longer than this to arrive, or when a response write has not completed
    /// for this long (a client that stopped reading). The last one means a client must
    /// drain each 256 KiB chunk within this time.
    public var idleTimeout: Duration

    /// The defaults suit a LAN or CI origin; raise `maxConnections` together with
    /// `ulimit -n` for a busy public one.
    public init(maxConnections: Int = 256, idleTimeout: Duration = .seconds(60)) {
        self.maxConnections = max(1, maxConnections)
        self.idleTimeout = max(.milliseconds(100), idleTimeout)
    }

    /// The idle timeout in NIO's unit.
    var idleTimeAmount: TimeAmount {
        let (seconds, attoseconds) = idleTimeout.components
        let (nanoseconds, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .hours(24 * 365) : .nanoseconds(nanoseconds &+ attoseconds / 1_000_000_000)
    }
}
