/// Which of an origin's connection pools a request goes to: ranges a reader is waiting
/// for (``SpanDemands``, served alongside a pack's stream) get connections of their own.
///
/// Why: a read that jumps ahead of a pack's stream waits on one small range, and must not
/// queue behind the stream's bytes.
/// - Over HTTP/1.1 every busy connection of the pool (`--max-connections`, 8) may hold a
///   pack's stream for minutes; a range asked for then waited for one of them to finish.
/// - Over HTTP/2 the range shares the stream's connection, and the server sends it only
///   after what the stream already put in the connection's buffers, about a
///   bandwidth-delay product (on a 50 ms, 100 Mbit/s link: 40 ms more for the last 64 KiB
///   of a 256 MiB file read first, `Benchmarks/wan.py`). async-http-client also sends no
///   request on a new HTTP/2 connection before the server's SETTINGS arrive: a round trip
///   more than HTTP/1.1 on every cold connection (4 against 3).
///
/// So a reader's ranges go over HTTP/1.1, on a pool that streams never use: a new
/// connection costs the TCP and TLS handshakes and one round trip, like the stream's own,
/// and its bytes share the link with the stream instead of waiting behind it.
///
/// A task-local value, set by whoever serves the reader (`PackPipeline+Demands.swift`) and
/// read by the origin that sends the request (``HTTPOrigin``): the layers between them
/// (mirror sets, the span fetcher, multi-range downloads) need not know of it.
public enum RequestLane: Sendable, Equatable {
    /// Pack streams, indexes, manifests, updates: the origin's main pool (HTTP/2 when the
    /// server offers it).
    case bulk
    /// Bytes a reader is blocked on: an HTTP/1.1 pool of their own.
    case reader

    /// The lane of requests made by the current task (and the tasks it starts).
    @TaskLocal public static var current: RequestLane = .bulk
}
