/// Hashes a file's content block by block as it streams past (see ``BlockHash``): block k
/// covers bytes k·blockSize ..< (k+1)·blockSize, the last one shorter. `odrfs build` feeds it
/// each large file it packs, for the index's block table.
public struct BlockHasher: Sendable {
    public let blockSize: Int
    private var pending: [UInt8] = []
    public private(set) var hashes: [BlockHash] = []

    /// `blockSize` must be positive.
    public init(blockSize: ByteCount) {
        self.blockSize = Int(clamping: max(blockSize.value, 1))
        pending.reserveCapacity(self.blockSize)
    }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        var rest = bytes
        while !rest.isEmpty {
            if pending.isEmpty && rest.count >= blockSize {
                // A whole block in the caller's buffer: hash it in place, no copy.
                hashes.append(BlockHash.of(UnsafeRawBufferPointer(rebasing: rest[..<blockSize])))
                rest = UnsafeRawBufferPointer(rebasing: rest[blockSize...])
                continue
            }
            let take = min(blockSize - pending.count, rest.count)
            pending.append(contentsOf: rest[..<take])
            rest = UnsafeRawBufferPointer(rebasing: rest[take...])
            if pending.count == blockSize {
                hashes.append(BlockHash.of(pending))
                pending.removeAll(keepingCapacity: true)
            }
        }
    }

    /// The hashes of every block, the short last one included.
    public mutating func finalize() -> [BlockHash] {
        if !pending.isEmpty {
            hashes.append(BlockHash.of(pending))
            pending.removeAll()
        }
        return hashes
    }
}
