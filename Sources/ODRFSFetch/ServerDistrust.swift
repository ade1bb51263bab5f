/// How long a server that sent bad bytes for a file is passed over for that file: a short
/// backoff that doubles with each bad answer in a row (5 s, 10 s, 20 s, … at most 5 min),
/// so a CDN edge that once sent a broken response is tried again soon, and one that keeps
/// lying costs little. A good answer forgets it (``MirrorSet``).
struct ServerDistrust: Sendable, Equatable {
    /// Bad answers in a row.
    let strikes: Int
    /// This strike's backoff.
    let backoff: Duration
    /// Until when the server is passed over.
    let until: ContinuousClock.Instant

    static let firstBackoff = Duration.seconds(5)
    static let longestBackoff = Duration.seconds(300)

    /// The distrust after one more bad answer at `now`.
    static func after(_ previous: ServerDistrust?, now: ContinuousClock.Instant) -> ServerDistrust {
        let strikes = min((previous?.strikes ?? 0) + 1, 64)
        var backoff = firstBackoff
        for _ in 1..<strikes where backoff < longestBackoff { backoff *= 2 }
        backoff = min(backoff, longestBackoff)
        return ServerDistrust(strikes: strikes, backoff: backoff, until: now + backoff)
    }
}
