/// The file index's chunks of one pack's large files, placed at their offsets in the
/// (uncompressed) pack: what lets a download release a large file's bytes a
/// content-defined chunk (or a version-3 block) at a time, and prove bytes fetched by range
/// at any offset, instead of waiting for a whole 1 MiB manifest chunk.
///
/// Trust: the index is verified against the signed manifest before anything reads it, so
/// its chunk digests are as trusted as the manifest's chunk hashes. They only ever *add*
/// verified ranges: the manifest's chunk hashes still guard the whole pack before it is
/// published, and a chunk whose bytes do not match is simply not released.
///
/// Invariants: chunks are sorted by offset, non-empty, disjoint and inside the pack;
/// every offset is computed with checked arithmetic (an entry whose chunks would leave
/// the pack is left out, as are chunks overlapping another file's).
public struct PackChunkMap: Sendable, Equatable {
    /// One chunk: where it lies in the pack and its digest.
    public struct Chunk: Sendable, Equatable {
        public var range: Range<Int64>
        public var digest: ChunkDigest

        public init(range: Range<Int64>, digest: ChunkDigest) {
            self.range = range
            self.digest = digest
        }
    }

    /// Sorted by offset, disjoint.
    public let chunks: [Chunk]

    /// A map of no chunks: bytes are released by the manifest's chunks only.
    public static let empty = PackChunkMap(sorted: [])

    private init(sorted: [Chunk]) {
        self.chunks = sorted
    }

    /// Keeps the chunks of `candidates` that lie inside a pack of `packBytes` bytes, sorted,
    /// dropping any that overlap one kept before it.
    public init(chunks candidates: [Chunk], packBytes: Int64) {
        var sorted = candidates.filter { !$0.range.isEmpty && $0.range.lowerBound >= 0 && $0.range.upperBound <= packBytes }
        sorted.sort { $0.range.lowerBound < $1.range.lowerBound }
        var kept: [Chunk] = []
        kept.reserveCapacity(sorted.count)
        for chunk in sorted where kept.last.map({ $0.range.upperBound <= chunk.range.lowerBound }) ?? true {
            kept.append(chunk)
        }
        self.init(sorted: kept)
    }

    /// The chunks `index` records for the files of `pack`, a pack of `packBytes` bytes.
    /// Cost: one pass over the index's files that have chunks (large files only).
    public init(index: FileIndex, pack: PackNumber, packBytes: Int64) {
        var found: [Chunk] = []
        for number in index.filesWithChunks {
            guard let entry = index.entry(number), entry.pack == pack, let base = Int64(exactly: entry.dataOffset),
                  let chunks = index.chunks(of: number) else { continue }
            for chunk in chunks {
                let (start, overflowStart) = base.addingReportingOverflow(chunk.offset)
                let (end, overflowEnd) = start.addingReportingOverflow(chunk.length)
                guard !overflowStart, !overflowEnd, chunk.length > 0 else { continue }
                found.append(Chunk(range: start..<end, digest: chunk.digest))
            }
        }
        self.init(chunks: found, packBytes: packBytes)
    }

    public var isEmpty: Bool { chunks.isEmpty }

    /// The position of the first chunk that ends after `offset`.
    public func firstChunk(endingAfter offset: Int64) -> Int {
        var low = 0, high = chunks.count
        while low < high {
            let middle = low + (high - low) / 2
            if chunks[middle].range.upperBound <= offset { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The chunks that share a byte with `range`, in order.
    public func chunks(overlapping range: Range<Int64>) -> ArraySlice<Chunk> {
        let first = firstChunk(endingAfter: range.lowerBound)
        var last = first
        while last < chunks.count, chunks[last].range.lowerBound < range.upperBound { last += 1 }
        return chunks[first..<last]
    }

    /// The ranges of the chunks wholly inside `bytes` (which start at pack offset `start`)
    /// whose bytes match their digests, and `through`: the end of the last chunk wholly
    /// inside (`start` when none is), so that a stream can go on from there. A chunk that does
    /// not match is left out: the manifest's chunk hashes decide about those bytes.
    public func verifiedRanges(in bytes: UnsafeRawBufferPointer, at start: Int64) -> (verified: [Range<Int64>], through: Int64) {
        let end = start + Int64(bytes.count)
        var verified: [Range<Int64>] = []
        var through = start
        var position = firstChunk(endingAfter: start)
        while position < chunks.count, chunks[position].range.upperBound <= end {
            let chunk = chunks[position]
            position += 1
            guard chunk.range.lowerBound >= start else { continue }
            through = chunk.range.upperBound
            let from = Int(chunk.range.lowerBound - start)
            let slice = UnsafeRawBufferPointer(rebasing: bytes[from..<(from + Int(chunk.range.count))])
            if chunk.digest.matches(slice) { verified.append(chunk.range) }
        }
        return (verified, through)
    }

    /// The proven pieces of `bytes` (at pack offset `start`): each chunk wholly inside that
    /// matches its digest, with its bytes; and where a stream can go on from.
    public func verifiedPieces(of bytes: UnsafeRawBufferPointer, at start: Int64) -> (pieces: [(Int64, [UInt8])], through: Int64) {
        let (ranges, through) = verifiedRanges(in: bytes, at: start)
        let pieces = ranges.map { range in
            (range.lowerBound, Array(UnsafeRawBufferPointer(rebasing: bytes[Int(range.lowerBound - start)..<Int(range.upperBound - start)])))
        }
        return (pieces, through)
    }
}
