/// How a download shares the link, as the mount's scheduler decides: before each buffer is
/// written it may go on, or step aside. Stepping aside drops the connection (the body is
/// left unread, so the client closes it): pausing at the next buffer stops reading, not
/// sending, and the socket buffers and the server's send window would stay full of
/// prefetch bytes that an open's first bytes must queue behind on a shared link. The
/// download then waits in ``untilResumable`` and goes on with a `Range` request from the
/// first byte it has not written (a compressed pack keeps the frame in progress), so
/// nothing verified is fetched twice.
public struct DownloadPacing: Sendable {
    /// What a download does with the buffer in hand.
    public enum Decision: Sendable {
        /// Write it and read on.
        case proceed
        /// Drop it and the connection; resume later from the bytes written.
        case stepAside
    }

    /// Awaited with each buffer's size before the buffer is written (it may wait there,
    /// e.g. for a rate limit).
    public let beforeWrite: @Sendable (Int) async throws(FetchError) -> Decision
    /// Awaited after stepping aside, before the download asks the origin again.
    public let untilResumable: @Sendable () async throws(FetchError) -> Void

    public init(beforeWrite: @escaping @Sendable (Int) async throws(FetchError) -> Decision,
                untilResumable: @escaping @Sendable () async throws(FetchError) -> Void) {
        self.beforeWrite = beforeWrite
        self.untilResumable = untilResumable
    }

    /// Thrown by a download's consumer to drop the connection; never leaves the downloader.
    static func steppedAside(_ pack: String) -> FetchError {
        FetchError(.cancelled, "download of \(pack) stepped aside for an open")
    }
}
