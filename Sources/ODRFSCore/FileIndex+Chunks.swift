/// The chunks of large regular files: content-defined chunks with full SHA-256 hashes from
/// the chunk table of a version-4 index, or fixed blocks with truncated hashes from the block
/// table of a version-3 one (see ``FileIndexLayout``). An update copies the chunks of a
/// changed file that a local file already holds and fetches only the others.
extension FileIndex {
    /// Where the validated chunk table lies in the mapping.
    struct ChunkTable: Sendable {
        var parameters: ContentChunking
        var rowsStart: Int
        var fileCount: Int
        var chunksStart: Int
        var chunkCount: Int
    }

    /// How the index chunks large files; nil when it records no chunks.
    public var chunking: IndexChunking? {
        if let contentChunks { return .contentDefined(contentChunks.parameters) }
        return blocks.map { .fixedBlocks(ByteCount($0.blockSize)) }
    }

    /// The regular files that have chunks, in entry order.
    public var filesWithChunks: [EntryNumber] {
        guard let table = contentChunks else { return filesWithBlockHashes }
        return (0..<table.fileCount).map { EntryNumber(chunkRowEntry(table, $0)) }
    }

    /// The file's chunks in order, covering it exactly; nil when it has none (small files,
    /// other kinds, out-of-range numbers, indexes before version 3).
    public func chunks(of n: EntryNumber) -> [FileChunk]? {
        guard let table = contentChunks else {
            guard let blocks, let hashes = blockHashes(of: n), let size = entry(n)?.size else { return nil }
            let fileSize = Int64(clamping: size)
            return hashes.enumerated().map { k, hash in
                let start = Int64(k) * blocks.blockSize
                return FileChunk(offset: start, length: min(blocks.blockSize, fileSize - start), digest: ChunkDigest(block: hash))
            }
        }
        guard let row = chunkRow(of: n.rawValue, in: table) else { return nil }
        let span = chunkSpan(ofRow: row, in: table)
        var chunks: [FileChunk] = []
        chunks.reserveCapacity(span.count)
        var start: Int64 = 0
        for k in span {
            let at = table.chunksStart + k * FileIndexLayout.Chunks.chunkSize
            // Validated at init: ends strictly increase and fit the file's size.
            let end = Int64(base.u64(at + FileIndexLayout.Chunks.chunkEnd))
            chunks.append(FileChunk(offset: start, length: end - start,
                                    digest: ChunkDigest(loading: base, at: at + FileIndexLayout.Chunks.chunkDigest)))
            start = end
        }
        return chunks
    }

    /// The chunk of file `n` that holds byte `offset` of it, by binary search; nil when the
    /// file has no chunk table (or the offset is outside it).
    public func chunk(of n: EntryNumber, containing offset: Int64) -> FileChunk? {
        guard let table = contentChunks else {
            // Fixed blocks: the k-th, without building the file's whole list. The last block
            // is short: an offset past the file may still divide into it, hence the size test.
            guard let blocks, offset >= 0, let size = entry(n)?.size, offset < Int64(clamping: size),
                  let hashes = blockHashes(of: n) else { return nil }
            let k = Int(offset / blocks.blockSize)
            let start = Int64(k) * blocks.blockSize
            return FileChunk(offset: start, length: min(blocks.blockSize, Int64(clamping: size) - start), digest: ChunkDigest(block: hashes[k]))
        }
        guard offset >= 0, let row = chunkRow(of: n.rawValue, in: table) else { return nil }
        let span = chunkSpan(ofRow: row, in: table)
        func end(_ k: Int) -> Int64 { Int64(base.u64(table.chunksStart + k * FileIndexLayout.Chunks.chunkSize)) }
        var low = span.lowerBound, high = span.upperBound
        while low < high {
            let middle = low + (high - low) / 2
            if end(middle) <= offset { low = middle + 1 } else { high = middle }
        }
        guard low < span.upperBound else { return nil }
        let start = low == span.lowerBound ? 0 : end(low - 1)
        let at = table.chunksStart + low * FileIndexLayout.Chunks.chunkSize
        return FileChunk(offset: start, length: end(low) - start,
                         digest: ChunkDigest(loading: base, at: at + FileIndexLayout.Chunks.chunkDigest))
    }

    private func chunkSpan(ofRow row: Int, in table: ChunkTable) -> Range<Int> {
        typealias C = FileIndexLayout.Chunks
        let first = Int(base.u64(table.rowsStart + row * C.rowSize + C.rowFirstChunk))
        let next = row + 1 < table.fileCount ? Int(base.u64(table.rowsStart + (row + 1) * C.rowSize + C.rowFirstChunk)) : table.chunkCount
        return first..<next
    }

    private func chunkRow(of n: UInt32, in table: ChunkTable) -> Int? {
        row(of: n, rowsStart: table.rowsStart, rowSize: FileIndexLayout.Chunks.rowSize, count: table.fileCount)
    }

    @inline(__always) private func chunkRowEntry(_ table: ChunkTable, _ row: Int) -> UInt32 {
        base.u32(table.rowsStart + row * FileIndexLayout.Chunks.rowSize + FileIndexLayout.Chunks.rowEntry)
    }

    /// Checks the whole table once, so accessors can trust it: known algorithm and valid
    /// parameters, rows that name non-empty regular files in increasing order and own at
    /// least one chunk each, chunk ends that strictly increase by at most `maximum` and end
    /// at their file's size, and a chunk array exactly as long as the rows use. Every sum is
    /// checked; nothing is read out of `range`.
    func validateChunks(_ range: Range<Int>) throws(FileIndexError) -> ChunkTable {
        typealias C = FileIndexLayout.Chunks
        let length = UInt64(range.count)
        guard length >= UInt64(C.headerSize) else {
            throw FileIndexError(.truncated, "chunk table is \(length) bytes, shorter than its \(C.headerSize)-byte header")
        }
        let start = range.lowerBound
        let algorithm = base.u32(start + C.algorithm)
        let parameters = ContentChunking(minimum: base.u32(start + C.minimum), average: base.u32(start + C.average),
                                         maximum: base.u32(start + C.maximum))
        guard algorithm == C.fastCDC, parameters.isValid else {
            throw FileIndexError(.corrupt, "chunk table has algorithm \(algorithm) with \(parameters), not FastCDC with parameters in \(ContentChunking.bounds) and a power-of-two average")
        }
        let hashSize = base.u32(start + C.hashSize), fileCount = base.u32(start + C.fileCount)
        guard hashSize == UInt32(ChunkDigest.sha256ByteCount), base.u64(start + C.reserved) == 0 else {
            throw FileIndexError(.corrupt, "chunk table has hash size \(hashSize) (expected \(ChunkDigest.sha256ByteCount)) or a nonzero reserved field")
        }
        let rowsLength = UInt64(fileCount) * UInt64(C.rowSize)
        guard rowsLength <= length - UInt64(C.headerSize) else {
            throw FileIndexError(.truncated, "chunk table lists \(fileCount) files but has room for \((length - UInt64(C.headerSize)) / UInt64(C.rowSize))")
        }
        let rest = length - UInt64(C.headerSize) - rowsLength
        // Exactly as long as the chunks need: trailing bytes would be unverifiable slack.
        guard rest % UInt64(C.chunkSize) == 0 else {
            throw FileIndexError(.corrupt, "chunk table's chunk array is \(rest) bytes, not a multiple of \(C.chunkSize)")
        }
        let chunkCount = rest / UInt64(C.chunkSize)
        let rowsStart = start + C.headerSize
        let chunksStart = rowsStart + Int(rowsLength)
        let maximum = UInt64(parameters.maximum)
        var previous: UInt32?
        for row in 0..<Int(fileCount) {
            let r = base + rowsStart + row * C.rowSize
            let n = r.u32(C.rowEntry)
            let size = try rowFileSize("chunk", row: row, entry: n, after: previous)
            previous = n
            let first = r.u64(C.rowFirstChunk)
            let next = row + 1 < Int(fileCount) ? (r + C.rowSize).u64(C.rowFirstChunk) : chunkCount
            guard r.u32(C.rowReserved) == 0, row > 0 || first == 0, first < next, next <= chunkCount else {
                throw FileIndexError(.corrupt, "chunk table row \(row) (entry \(n)) has chunks \(first)..<\(next) of \(chunkCount)")
            }
            // first < next ≤ chunkCount < 2^61: the offsets below fit an Int.
            var end: UInt64 = 0
            for k in Int(first)..<Int(next) {
                let chunkEnd = base.u64(chunksStart + k * C.chunkSize + C.chunkEnd)
                guard chunkEnd > end, chunkEnd - end <= maximum else {
                    throw FileIndexError(.corrupt, "chunk table row \(row) (entry \(n)): chunk \(k) ends at \(chunkEnd) after \(end) (chunks must grow by 1...\(maximum) bytes)")
                }
                end = chunkEnd
            }
            guard end == size else {
                throw FileIndexError(.corrupt, "chunk table row \(row) (entry \(n)): chunks end at \(end), the file is \(size) bytes")
            }
        }
        guard fileCount > 0 || chunkCount == 0 else {
            throw FileIndexError(.corrupt, "chunk table has \(chunkCount) chunks and no files")
        }
        return ChunkTable(parameters: parameters, rowsStart: rowsStart, fileCount: Int(fileCount), chunksStart: chunksStart,
                          chunkCount: Int(chunkCount))
    }
}
