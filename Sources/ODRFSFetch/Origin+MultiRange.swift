import NIOCore
import ODRFSCore

/// Where a multi-range download hands its bytes: each chunk with its offset in the file.
/// Chunks of one range arrive in order; ranges may arrive in any order.
public typealias RangeSink = (_ offset: Int64, _ bytes: ByteBuffer) async throws(FetchError) -> Void

extension Origin {
    /// The default for an origin without multi-range requests: an origin that serves
    /// ranges (``servesRanges``) gets one range request per range, any other is read once,
    /// whole, keeping the ranges' bytes.
    public func download(
        _ path: String,
        ranges: [Range<Int64>],
        fileBytes: ByteCount,
        into consume: RangeSink
    ) async throws(FetchError) {
        let wanted = try ByteRanges(ranges, fileBytes: fileBytes, path: path)
        guard !wanted.isEmpty else { return }
        if servesRanges {
            return try await downloadEachRange(path, ranges: wanted.ranges, fileBytes: fileBytes, into: consume)
        }
        var position: Int64 = 0
        let last = wanted.ranges[wanted.ranges.count - 1].upperBound
        try await download(path, expectedBytes: fileBytes) { (bytes: ByteBuffer) async throws(FetchError) in
            let start = position
            position += Int64(bytes.readableBytes)
            for piece in wanted.pieces(ofChunkAt: start, count: bytes.readableBytes) {
                guard let slice = bytes.getSlice(at: bytes.readerIndex + piece.indexes.lowerBound, length: piece.indexes.count) else { continue }
                try await consume(piece.offset, slice)
            }
        }
        guard position >= last else {
            throw FetchError(.corrupt, "\(path) ended at byte \(position), before the end of the ranges asked for")
        }
    }

    /// One single-range request per range, in order.
    func downloadEachRange(_ path: String, ranges: [Range<Int64>], fileBytes: ByteCount, into consume: RangeSink) async throws(FetchError) {
        for range in ranges {
            var position = range.lowerBound
            try await download(path, range: range, fileBytes: fileBytes) { (bytes: ByteBuffer) async throws(FetchError) in
                let at = position
                position += Int64(bytes.readableBytes)
                try await consume(at, bytes)
            }
        }
    }
}
