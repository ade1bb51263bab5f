import ODRFSCore

/// Byte ranges of one file still to be fetched: what a multi-range download asks for, and
/// what remains of it after a response broke off (so the next attempt, or the next mirror,
/// asks only for the rest). Sorted, disjoint, none empty, and not adjacent.
struct ByteRanges: Equatable {
    private(set) var ranges: [Range<Int64>]

    /// The most ranges one request asks for: `odrfs serve` answers at most 64 parts, and a
    /// longer Range header risks a server's header size limit.
    static let maximumPerRequest = 64

    /// `requested` checked against the file (`fileBytes` long) and normalised: empty ones
    /// dropped, sorted, overlapping and adjacent ones merged (as a server may merge them).
    init(_ requested: [Range<Int64>], fileBytes: ByteCount, path: String) throws(FetchError) {
        for range in requested { try Self.check(range, fileBytes: fileBytes, path: path) }
        var merged: [Range<Int64>] = []
        for range in requested.filter({ !$0.isEmpty }).sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = merged.last, range.lowerBound <= last.upperBound {
                merged[merged.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
            } else {
                merged.append(range)
            }
        }
        ranges = merged
    }

    /// Refuses a range that is not inside the file (`fileBytes` long): the one check every
    /// range download makes before it asks anything of a server.
    static func check(_ range: Range<Int64>, fileBytes: ByteCount, path: String) throws(FetchError) {
        guard range.lowerBound >= 0, range.upperBound <= fileBytes.value else {
            throw FetchError(.corrupt, "range \(range) lies outside the \(fileBytes.value) bytes of \(path)")
        }
    }

    var isEmpty: Bool { ranges.isEmpty }

    /// Bytes still wanted (at most the file's size: the ranges are disjoint and inside it).
    var byteCount: Int64 { ranges.reduce(0) { $0 + Int64($1.count) } }

    /// Marks `span` as received.
    mutating func remove(_ span: Range<Int64>) {
        guard !span.isEmpty else { return }
        var rest: [Range<Int64>] = []
        for range in ranges {
            guard range.overlaps(span) else {
                rest.append(range)
                continue
            }
            if range.lowerBound < span.lowerBound { rest.append(range.lowerBound..<span.lowerBound) }
            if span.upperBound < range.upperBound { rest.append(span.upperBound..<range.upperBound) }
        }
        ranges = rest
    }

    /// At most `size` ranges each, in order: one request's worth.
    func batches(of size: Int) -> [[Range<Int64>]] {
        stride(from: 0, to: ranges.count, by: max(1, size)).map { Array(ranges[$0..<min($0 + max(1, size), ranges.count)]) }
    }

    /// The `Range` header value asking for these ranges ("bytes=0-9,20-29").
    var headerValue: String {
        "bytes=" + ranges.map { "\($0.lowerBound)-\($0.upperBound - 1)" }.joined(separator: ",")
    }

    /// The parts of `chunk` (which holds file bytes `chunkOffset…`) inside these ranges,
    /// each as an offset into the file and a range of indexes into the chunk.
    func pieces(ofChunkAt chunkOffset: Int64, count: Int) -> [(offset: Int64, indexes: Range<Int>)] {
        let end = chunkOffset + Int64(count)
        return ranges.compactMap { range in
            let from = max(range.lowerBound, chunkOffset), to = min(range.upperBound, end)
            guard from < to else { return nil }
            return (from, Int(from - chunkOffset)..<Int(to - chunkOffset))
        }
    }
}
