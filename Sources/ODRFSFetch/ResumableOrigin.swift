import NIOCore
import ODRFSCore

/// An origin that can start a download at any byte (an HTTP server with `Range`, or a set
/// of them): its whole-file download is the resumable one from byte 0, so each such
/// origin writes the transfer once, in ``Origin/download(_:from:expectedBytes:into:)``.
public protocol ResumableOrigin: Origin {}

extension ResumableOrigin {
    public func download(
        _ path: String,
        expectedBytes: ByteCount,
        into consume: (ByteBuffer) async throws(FetchError) -> Void
    ) async throws(FetchError) {
        try await download(path, from: 0, expectedBytes: expectedBytes, into: consume)
    }
}
