import NIOCore
import ODRFSCore

extension MirrorSet {
    /// Bytes `ranges` of `path` from the healthiest server, in one multi-range request when
    /// it can (see ``HTTPOrigin``); when it fails mid-response, the next server is asked for
    /// what has not arrived yet (the ranges not started and the rest of the one cut off),
    /// as ``download(_:from:expectedBytes:into:)`` does for whole files.
    public func download(
        _ path: String,
        ranges: [Range<Int64>],
        fileBytes: ByteCount,
        into consume: RangeSink
    ) async throws(FetchError) {
        var remaining = try ByteRanges(ranges, fileBytes: fileBytes, path: path)
        guard !remaining.isEmpty else { return }
        try await withFailover(path) { (origin: any Origin, consumerFailed: inout Bool) async throws(FetchError) in
            guard !remaining.isEmpty else { return }
            try await origin.download(path, ranges: remaining.ranges, fileBytes: fileBytes) { (offset: Int64, bytes: ByteBuffer) async throws(FetchError) in
                do throws(FetchError) { try await consume(offset, bytes) } catch {
                    consumerFailed = true
                    throw error
                }
                remaining.remove(offset..<(offset + Int64(bytes.readableBytes)))
            }
        }
    }
}
