/// Per-block hashes of large regular files, from the block table of a version-3 index (see
/// ``FileIndexLayout``). An update uses them to copy the unchanged blocks of a changed file
/// from the cache and fetch only the blocks that changed.
extension FileIndex {
    /// Where the validated block table lies in the mapping.
    struct BlockTable: Sendable {
        var blockSize: Int64
        var rowsStart: Int
        var fileCount: Int
        var hashesStart: Int
    }

    /// The size of the blocks the table hashes; nil when the index has no block table.
    public var blockSize: ByteCount? { blocks.map { ByteCount($0.blockSize) } }

    /// The regular files that have block hashes, in entry order.
    public var filesWithBlockHashes: [EntryNumber] {
        guard let blocks else { return [] }
        return (0..<blocks.fileCount).map { EntryNumber(rowEntry(blocks, $0)) }
    }

    /// The hashes of the file's blocks, block k covering its bytes k·blockSize ..<
    /// min((k+1)·blockSize, size); nil when the file has none (small files, other kinds,
    /// out-of-range numbers, indexes before version 3).
    public func blockHashes(of n: EntryNumber) -> [BlockHash]? {
        guard let blocks, let row = row(of: n.rawValue, in: blocks), let entry = entry(n) else { return nil }
        // Validated at init: the row's blocks are in the table, their count fits an Int.
        let first = Int(base.u64(blocks.rowsStart + row * FileIndexLayout.Blocks.rowSize + FileIndexLayout.Blocks.rowFirstBlock))
        let count = Int(Self.blockCount(size: entry.size, blockSize: blocks.blockSize))
        return (0..<count).map { BlockHash.load(base, at: blocks.hashesStart + (first + $0) * BlockHash.byteCount) }
    }

    private func row(of n: UInt32, in blocks: BlockTable) -> Int? {
        row(of: n, rowsStart: blocks.rowsStart, rowSize: FileIndexLayout.Blocks.rowSize, count: blocks.fileCount)
    }

    /// The row of entry `n` in a validated table of `count` rows of `rowSize` bytes that
    /// start with the entry number (the block and chunk tables), by binary search over the
    /// strictly increasing entry numbers.
    func row(of n: UInt32, rowsStart: Int, rowSize: Int, count: Int) -> Int? {
        var low = 0, high = count
        while low < high {
            let middle = low + (high - low) / 2
            let entry = base.u32(rowsStart + middle * rowSize)
            if entry == n { return middle }
            if entry < n { low = middle + 1 } else { high = middle }
        }
        return nil
    }

    @inline(__always) private func rowEntry(_ blocks: BlockTable, _ row: Int) -> UInt32 {
        base.u32(blocks.rowsStart + row * FileIndexLayout.Blocks.rowSize + FileIndexLayout.Blocks.rowEntry)
    }

    /// The size of the file a row of the block or chunk table names: a non-empty regular
    /// file whose entry number comes after the row before's.
    func rowFileSize(_ table: String, row: Int, entry n: UInt32, after previous: UInt32?) throws(FileIndexError) -> UInt64 {
        guard n < count, previous.map({ $0 < n }) ?? true else {
            throw FileIndexError(.corrupt, "\(table) table row \(row) names entry \(n): out of range or not after the row before")
        }
        guard kind(n) == .regularFile, let size = entry(EntryNumber(n))?.size, size > 0 else {
            throw FileIndexError(.corrupt, "\(table) table row \(row) names entry \(n), which is not a non-empty regular file")
        }
        return size
    }

    /// ⌈size / blockSize⌉ without overflow (`blockSize` > 0).
    static func blockCount(size: UInt64, blockSize: Int64) -> UInt64 {
        let block = UInt64(blockSize)
        return size / block + (size % block == 0 ? 0 : 1)
    }

    /// Checks the whole table once, so accessors can trust it: sizes, rows that name regular
    /// files in increasing order, block counts that match each file's size, and a hash array
    /// exactly as long as the rows need. Every sum is checked; nothing is read out of `range`.
    func validateBlocks(_ range: Range<Int>) throws(FileIndexError) -> BlockTable {
        typealias B = FileIndexLayout.Blocks
        let length = UInt64(range.count)
        guard length >= UInt64(B.headerSize) else {
            throw FileIndexError(.truncated, "block table is \(length) bytes, shorter than its \(B.headerSize)-byte header")
        }
        let start = range.lowerBound
        let blockSize = base.u32(start + B.blockSize), hashSize = base.u32(start + B.hashSize)
        let fileCount = base.u32(start + B.fileCount)
        guard B.blockSizes.contains(blockSize), blockSize.nonzeroBitCount == 1 else {
            throw FileIndexError(.corrupt, "block table has block size \(blockSize), not a power of two in \(B.blockSizes)")
        }
        guard hashSize == UInt32(BlockHash.byteCount), base.u32(start + B.reserved) == 0 else {
            throw FileIndexError(.corrupt, "block table has hash size \(hashSize) (expected \(BlockHash.byteCount)) or a nonzero reserved field")
        }
        let rowsLength = UInt64(fileCount) * UInt64(B.rowSize)
        guard rowsLength <= length - UInt64(B.headerSize) else {
            throw FileIndexError(.truncated, "block table lists \(fileCount) files but has room for \((length - UInt64(B.headerSize)) / UInt64(B.rowSize))")
        }
        let rowsStart = start + B.headerSize
        let hashesStart = rowsStart + Int(rowsLength)
        let hashRoom = (length - UInt64(B.headerSize) - rowsLength) / UInt64(BlockHash.byteCount)
        var total: UInt64 = 0
        var previous: UInt32?
        for row in 0..<Int(fileCount) {
            let r = base + rowsStart + row * B.rowSize
            let n = r.u32(B.rowEntry)
            let size = try rowFileSize("block", row: row, entry: n, after: previous)
            previous = n
            guard r.u32(B.rowReserved) == 0, r.u64(B.rowFirstBlock) == total else {
                throw FileIndexError(.corrupt, "block table row \(row) (entry \(n)) starts at block \(r.u64(B.rowFirstBlock)), expected \(total)")
            }
            let (sum, overflow) = total.addingReportingOverflow(Self.blockCount(size: size, blockSize: Int64(blockSize)))
            guard !overflow, sum <= hashRoom else {
                throw FileIndexError(.truncated, "block table row \(row) (entry \(n)) needs hashes past the end of the table (room for \(hashRoom))")
            }
            total = sum
        }
        // Exactly as long as the rows need: trailing bytes would be unverifiable slack.
        guard total == hashRoom, (length - UInt64(B.headerSize) - rowsLength) % UInt64(BlockHash.byteCount) == 0 else {
            throw FileIndexError(.corrupt, "block table has room for \(hashRoom) hashes but its rows use \(total)")
        }
        return BlockTable(blockSize: Int64(blockSize), rowsStart: rowsStart, fileCount: Int(fileCount), hashesStart: hashesStart)
    }
}
