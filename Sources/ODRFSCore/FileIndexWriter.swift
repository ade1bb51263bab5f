/// Encodes a bundle's tree as a file index (see ``FileIndexLayout``).
///
/// The output depends only on the tree: children are sorted by name bytes here, whatever order
/// they come in, and entries are numbered breadth-first. `odrfs build` uses it; tests use it to
/// make indexes.
public struct FileIndexWriter: Sendable {
    /// One entry of the tree to encode.
    public struct Node: Sendable, Equatable {
        public var name: String
        public var kind: EntryKind
        public var permissions: UInt32
        public var modificationTime: Timestamp
        /// Regular files: content size.
        public var size: UInt64
        /// Regular files: which pack holds the bytes, and where they start in it.
        public var pack: PackNumber?
        public var dataOffset: UInt64
        /// Symlinks only.
        public var symlinkTarget: String?
        /// Directories only; any order.
        public var children: [Node]
        /// Regular files: the SHA-256 of the content, when known (written to the digest table).
        public var sha256: ContentHash? = nil
        /// Regular files: the hashes of the content's blocks of the writer's `blockSize`
        /// (written to the block table), when known; the builder records them for files of
        /// at least ``FileIndexWriter/minimumBlockHashedSize``.
        public var blockHashes: [BlockHash]? = nil
        /// Regular files: the content-defined chunks of the content (written to the chunk
        /// table of a version-4 index), when known; the builder records them for files of at
        /// least ``FileIndexWriter/minimumBlockHashedSize``.
        public var chunks: [FileChunk]? = nil

        public static func directory(_ name: String, permissions: UInt32 = 0o755,
                                     modificationTime: Timestamp = Timestamp(seconds: 0, nanoseconds: 0),
                                     children: [Node] = []) -> Node {
            Node(name: name, kind: .directory, permissions: permissions, modificationTime: modificationTime,
                 size: 0, pack: nil, dataOffset: 0, symlinkTarget: nil, children: children)
        }

        public static func file(_ name: String, size: UInt64, pack: PackNumber, dataOffset: UInt64,
                                permissions: UInt32 = 0o644,
                                modificationTime: Timestamp = Timestamp(seconds: 0, nanoseconds: 0),
                                sha256: ContentHash? = nil) -> Node {
            Node(name: name, kind: .regularFile, permissions: permissions, modificationTime: modificationTime,
                 size: size, pack: pack, dataOffset: dataOffset, symlinkTarget: nil, children: [], sha256: sha256)
        }

        public static func symlink(_ name: String, target: String, permissions: UInt32 = 0o777,
                                   modificationTime: Timestamp = Timestamp(seconds: 0, nanoseconds: 0)) -> Node {
            Node(name: name, kind: .symlink, permissions: permissions, modificationTime: modificationTime,
                 size: UInt64(target.utf8.count), pack: nil, dataOffset: 0, symlinkTarget: target, children: [])
        }
    }

    /// Number of packs in the manifest this index goes with; every file's pack must be below it.
    public var packCount: Int
    /// How large files are chunked: content-defined chunks make a version-4 index (the
    /// default), fixed blocks a version-3 one, as releases before version 4 wrote.
    public var chunking: IndexChunking

    /// The block size `odrfs build` hashes large files by: small enough that a change costs
    /// little more than the changed bytes, large enough that the table stays ~0.025 % of them.
    public static let defaultBlockSize = ByteCount.kibibytes(64)
    /// Files smaller than this get no block hashes: an update fetches them whole, and at
    /// most a few blocks could be saved.
    public static let minimumBlockHashedSize = ByteCount.kibibytes(256)

    public init(packCount: Int, chunking: IndexChunking = .contentDefined(.standard)) {
        self.packCount = packCount
        self.chunking = chunking
    }

    /// A writer of version-3 indexes, with a block table of `blockSize` blocks.
    public init(packCount: Int, blockSize: ByteCount) {
        self.init(packCount: packCount, chunking: .fixedBlocks(blockSize))
    }

    /// The block size of a version-3 block table (a power of two, 4 KiB to 16 MiB).
    var blockSize: ByteCount {
        if case .fixedBlocks(let size) = chunking { return size }
        return .zero
    }

    /// The index bytes for the tree under `root` (whose own name is ignored).
    public func encode(root: Node) throws(FileIndexError) -> [UInt8] {
        guard root.kind == .directory else { throw FileIndexError(.invalidTree, "the root must be a directory") }
        // Breadth-first: queue[i] becomes entry i; a directory's children are appended together.
        var queue: [(node: Node, parent: UInt32)] = [(root, 0)]
        var records: [UInt8] = []
        var strings: [UInt8] = []
        var digests: [UInt8] = []
        var blockRows: [(entry: UInt32, hashes: [BlockHash])] = []
        var chunkRows: [(entry: UInt32, chunks: [FileChunk])] = []
        let noDigest = [UInt8](repeating: 0, count: FileIndexLayout.digestSize)
        var next = 0
        while next < queue.count {
            let (node, parent) = queue[next]
            let number = UInt32(next)
            next += 1
            let nameBytes = number == 0 ? [] : Array(node.name.utf8)
            if number != 0 { try Self.check(name: node.name, bytes: nameBytes) }
            let nameOffset = UInt64(strings.count)
            strings.append(contentsOf: nameBytes)
            var pack = FileIndexLayout.noPack, data: UInt64 = 0, count: UInt32 = 0, subdirectories: UInt32 = 0
            var size: UInt64 = 0
            switch node.kind {
            case .regularFile:
                guard let number = node.pack, Int(number.rawValue) < packCount else {
                    throw FileIndexError(.invalidTree, "file '\(node.name)' has pack \(node.pack.map { "\($0.rawValue)" } ?? "none") but there are \(packCount) packs")
                }
                pack = number.rawValue
                data = node.dataOffset
                size = node.size
                switch chunking {
                case .fixedBlocks:
                    guard node.chunks == nil else {
                        throw FileIndexError(.invalidTree, "file '\(node.name)' has content-defined chunks, but this index has fixed blocks")
                    }
                    if let hashes = node.blockHashes {
                        try checkBlocks(hashes, of: node)
                        blockRows.append((entry: UInt32(next - 1), hashes: hashes))
                    }
                case .contentDefined(let parameters):
                    guard node.blockHashes == nil else {
                        throw FileIndexError(.invalidTree, "file '\(node.name)' has fixed block hashes, but this index has content-defined chunks")
                    }
                    if let chunks = node.chunks {
                        try Self.check(chunks, of: node, parameters: parameters)
                        chunkRows.append((entry: UInt32(next - 1), chunks: chunks))
                    }
                }
            case .symlink:
                let target = Array((node.symlinkTarget ?? "").utf8)
                data = UInt64(strings.count)
                count = UInt32(target.count)
                size = UInt64(target.count)
                strings.append(contentsOf: target)
            case .directory:
                let children = node.children.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
                for (a, b) in zip(children, children.dropFirst()) where a.name.utf8.elementsEqual(b.name.utf8) {
                    throw FileIndexError(.invalidTree, "directory '\(node.name)' has two entries named '\(a.name)'")
                }
                data = UInt64(queue.count)
                count = UInt32(children.count)
                subdirectories = UInt32(children.count { $0.kind == .directory })
                queue.append(contentsOf: children.map { ($0, number) })
                guard queue.count <= Int(UInt32.max) else { throw FileIndexError(.invalidTree, "more than 2^32 entries") }
            }
            digests.append(contentsOf: node.kind == .regularFile ? node.sha256?.digestBytes ?? noDigest : noDigest)
            records.appendLE(parent)
            records.append(contentsOf: [node.kind.rawValue, 0, 0, 0])
            records.appendLE(node.permissions & 0o7777)
            records.appendLE(UInt32(nameBytes.count))
            records.appendLE(nameOffset)
            records.appendLE(size)
            records.appendLE(node.modificationTime.seconds)
            records.appendLE(node.modificationTime.nanoseconds)
            records.appendLE(pack)
            records.appendLE(data)
            records.appendLE(count)
            records.appendLE(subdirectories)
            // Free the subtree we just flattened; keeps peak memory near one copy of the tree.
            queue[Int(number)].node.children = []
        }
        var out: [UInt8] = []
        out.reserveCapacity(FileIndexLayout.headerSize + records.count + strings.count + digests.count)
        out.append(contentsOf: FileIndexLayout.magic)
        if case .contentDefined = chunking { out.appendLE(FileIndexLayout.version) } else { out.appendLE(FileIndexLayout.blocksVersion) }
        out.appendLE(UInt32(FileIndexLayout.recordSize))
        out.appendLE(UInt32(queue.count))
        out.appendLE(UInt32(packCount))
        out.appendLE(UInt64(FileIndexLayout.headerSize))
        out.appendLE(UInt64(records.count))
        out.appendLE(UInt64(FileIndexLayout.headerSize + records.count))
        out.appendLE(UInt64(strings.count))
        out.appendLE(UInt64(FileIndexLayout.headerSize + records.count + strings.count))
        out.append(contentsOf: records)
        out.append(contentsOf: strings)
        out.append(contentsOf: digests)
        if !blockRows.isEmpty { appendBlockTable(blockRows, to: &out) }
        if case .contentDefined(let parameters) = chunking, !chunkRows.isEmpty {
            Self.appendChunkTable(chunkRows, parameters: parameters, to: &out)
        }
        return out
    }

    /// A file's chunks must cover it exactly, in order, each 1...maximum bytes, with full digests.
    private static func check(_ chunks: [FileChunk], of node: Node, parameters: ContentChunking) throws(FileIndexError) {
        guard parameters.isValid else {
            throw FileIndexError(.invalidTree, "chunking \(parameters) is not valid")
        }
        var end: Int64 = 0
        for chunk in chunks {
            guard chunk.offset == end, (1...Int64(parameters.maximum)).contains(chunk.length), chunk.digest.kind == .sha256 else {
                throw FileIndexError(.invalidTree, "file '\(node.name)' has a chunk of \(chunk.length) bytes at \(chunk.offset), expected one at \(end) of 1...\(parameters.maximum) bytes with a SHA-256")
            }
            end += chunk.length
        }
        guard node.size > 0, UInt64(end) == node.size else {
            throw FileIndexError(.invalidTree, "file '\(node.name)' of \(node.size) bytes has chunks covering \(end)")
        }
    }

    /// The version-4 chunk table (see ``FileIndexLayout``); rows are in entry order already.
    private static func appendChunkTable(_ rows: [(entry: UInt32, chunks: [FileChunk])], parameters: ContentChunking,
                                         to out: inout [UInt8]) {
        out.appendLE(FileIndexLayout.Chunks.fastCDC)
        out.appendLE(parameters.minimum)
        out.appendLE(parameters.average)
        out.appendLE(parameters.maximum)
        out.appendLE(UInt32(ChunkDigest.sha256ByteCount))
        out.appendLE(UInt32(rows.count))
        out.appendLE(UInt64(0))
        appendRows(rows.map { ($0.entry, $0.chunks.count) }, to: &out)
        for row in rows {
            for chunk in row.chunks {
                out.appendLE(UInt64(chunk.offset + chunk.length))
                out.append(contentsOf: chunk.digest.storedBytes)
            }
        }
    }

    private func checkBlocks(_ hashes: [BlockHash], of node: Node) throws(FileIndexError) {
        let size = blockSize.value
        guard size > 0, size <= Int64(UInt32.max), FileIndexLayout.Blocks.blockSizes.contains(UInt32(size)),
              size.nonzeroBitCount == 1 else {
            throw FileIndexError(.invalidTree, "block size \(size) is not a power of two in \(FileIndexLayout.Blocks.blockSizes)")
        }
        let expected = FileIndex.blockCount(size: node.size, blockSize: size)
        guard node.size > 0, UInt64(hashes.count) == expected else {
            throw FileIndexError(.invalidTree, "file '\(node.name)' of \(node.size) bytes has \(hashes.count) block hashes, expected \(expected)")
        }
    }

    /// The version-3 block table (see ``FileIndexLayout``); rows are in entry order already.
    private func appendBlockTable(_ rows: [(entry: UInt32, hashes: [BlockHash])], to out: inout [UInt8]) {
        out.appendLE(UInt32(blockSize.value))
        out.appendLE(UInt32(BlockHash.byteCount))
        out.appendLE(UInt32(rows.count))
        out.appendLE(UInt32(0))
        Self.appendRows(rows.map { ($0.entry, $0.hashes.count) }, to: &out)
        for row in rows {
            for hash in row.hashes { out.append(contentsOf: hash.storedBytes) }
        }
    }

    /// The 16-byte rows of the block and chunk tables: entry, reserved 0, and the number of
    /// the file's first hash or chunk (the counts of the rows before it).
    private static func appendRows(_ rows: [(entry: UInt32, count: Int)], to out: inout [UInt8]) {
        var first: UInt64 = 0
        for row in rows {
            out.appendLE(row.entry)
            out.appendLE(UInt32(0))
            out.appendLE(first)
            first += UInt64(row.count)
        }
    }

    private static func check(name: String, bytes: [UInt8]) throws(FileIndexError) {
        guard !bytes.isEmpty, name != ".", name != "..", !bytes.contains(UInt8(ascii: "/")), !bytes.contains(0) else {
            throw FileIndexError(.invalidTree, "invalid entry name '\(name)' (empty, '.', '..', or containing '/' or NUL)")
        }
    }
}
