import Crypto

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
    public func encode(root: consuming Node) throws(FileIndexError) -> [UInt8] {
        try encodeParts(root: consume root).joined()
    }

    /// The index for the tree under `root` (whose own name is ignored), in its parts.
    ///
    /// Entries are numbered breadth-first, and an entry's record, name and digest are written
    /// when it is numbered (when its directory is expanded), so only directories wait to be
    /// expanded: a queue of every node was a second copy of the tree (1.3 GB at ten million
    /// files, issue 28). A directory's record gets its child range when it is expanded.
    /// `root` is consumed: each directory's children are released once expanded.
    /// `entryCountHint`, the number of entries if known, sizes the tables up front (growing a
    /// 640 MB table by doubling holds the old and the new one at once).
    public func encodeParts(root: consuming Node, entryCountHint: Int = 0) throws(FileIndexError) -> EncodedIndex {
        guard root.kind == .directory else { throw FileIndexError(.invalidTree, "the root must be a directory") }
        var entries = Entries(writer: self)
        if entryCountHint > 0, entryCountHint <= Int(UInt32.max) {
            entries.records.reserveCapacity(entryCountHint * FileIndexLayout.recordSize)
            entries.digests.reserveCapacity(entryCountHint * FileIndexLayout.digestSize)
        }
        // Moved into the queue: the queue's copy is then the tree's only owner.
        try entries.add(consume root, parent: 0)
        var next = 0
        while next < entries.directories.count {
            let number = entries.directories[next].number
            // Taken out of the queue, so that this is the only reference: sorted in place, and
            // released with the loop's iteration.
            var children = entries.directories[next].node.children
            let name = entries.directories[next].node.name
            entries.directories[next].node = Node.directory("")
            next += 1
            children.sort { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
            for (a, b) in zip(children, children.dropFirst()) where a.name.utf8.elementsEqual(b.name.utf8) {
                throw FileIndexError(.invalidTree, "directory '\(name)' has two entries named '\(a.name)'")
            }
            entries.setChildren(of: number, first: entries.count, count: UInt32(children.count),
                                subdirectories: UInt32(children.count { $0.kind == .directory }))
            for child in children { try entries.add(child, parent: number) }
        }
        var header: [UInt8] = []
        header.reserveCapacity(FileIndexLayout.headerSize)
        header.append(contentsOf: FileIndexLayout.magic)
        if case .contentDefined = chunking { header.appendLE(FileIndexLayout.version) } else { header.appendLE(FileIndexLayout.blocksVersion) }
        header.appendLE(UInt32(FileIndexLayout.recordSize))
        header.appendLE(entries.count)
        header.appendLE(UInt32(packCount))
        header.appendLE(UInt64(FileIndexLayout.headerSize))
        header.appendLE(UInt64(entries.records.count))
        header.appendLE(UInt64(FileIndexLayout.headerSize + entries.records.count))
        header.appendLE(UInt64(entries.strings.count))
        header.appendLE(UInt64(FileIndexLayout.headerSize + entries.records.count + entries.strings.count))
        var trailing: [UInt8] = []
        if !entries.blockRows.isEmpty { appendBlockTable(entries.blockRows, to: &trailing) }
        if case .contentDefined(let parameters) = chunking, !entries.chunkRows.isEmpty {
            Self.appendChunkTable(entries.chunkRows, parameters: parameters, to: &trailing)
        }
        return EncodedIndex(parts: [header, entries.records, entries.strings, entries.digests, trailing])
    }

    /// The tables of an index being encoded, filled in entry order.
    private struct Entries {
        let writer: FileIndexWriter
        var records: [UInt8] = []
        var strings: [UInt8] = []
        var digests: [UInt8] = []
        var blockRows: [(entry: UInt32, hashes: [BlockHash])] = []
        var chunkRows: [(entry: UInt32, chunks: [FileChunk])] = []
        /// Directories numbered but not expanded yet, in entry order (nodes already expanded
        /// are left empty).
        var directories: [(node: Node, number: UInt32)] = []
        /// Entries numbered so far.
        var count: UInt32 = 0
        static let noDigest = [UInt8](repeating: 0, count: FileIndexLayout.digestSize)

        init(writer: FileIndexWriter) { self.writer = writer }

        /// Numbers `node` (the next entry) and writes its record, name and digest; a
        /// directory's child range is set when it is expanded (``setChildren(of:first:count:subdirectories:)``).
        mutating func add(_ node: Node, parent: UInt32) throws(FileIndexError) {
            guard count < UInt32.max else { throw FileIndexError(.invalidTree, "more than 2^32 entries") }
            let number = count
            count += 1
            let nameBytes = number == 0 ? [] : Array(node.name.utf8)
            if number != 0 { try FileIndexWriter.check(name: node.name, bytes: nameBytes) }
            let nameOffset = UInt64(strings.count)
            strings.append(contentsOf: nameBytes)
            var pack = FileIndexLayout.noPack, data: UInt64 = 0, targetCount: UInt32 = 0
            var size: UInt64 = 0
            switch node.kind {
            case .regularFile:
                guard let packNumber = node.pack, Int(packNumber.rawValue) < writer.packCount else {
                    throw FileIndexError(.invalidTree, "file '\(node.name)' has pack \(node.pack.map { "\($0.rawValue)" } ?? "none") but there are \(writer.packCount) packs")
                }
                pack = packNumber.rawValue
                data = node.dataOffset
                size = node.size
                switch writer.chunking {
                case .fixedBlocks:
                    guard node.chunks == nil else {
                        throw FileIndexError(.invalidTree, "file '\(node.name)' has content-defined chunks, but this index has fixed blocks")
                    }
                    if let hashes = node.blockHashes {
                        try writer.checkBlocks(hashes, of: node)
                        blockRows.append((entry: number, hashes: hashes))
                    }
                case .contentDefined(let parameters):
                    guard node.blockHashes == nil else {
                        throw FileIndexError(.invalidTree, "file '\(node.name)' has fixed block hashes, but this index has content-defined chunks")
                    }
                    if let chunks = node.chunks {
                        try FileIndexWriter.check(chunks, of: node, parameters: parameters)
                        chunkRows.append((entry: number, chunks: chunks))
                    }
                }
            case .symlink:
                let target = Array((node.symlinkTarget ?? "").utf8)
                data = UInt64(strings.count)
                targetCount = UInt32(target.count)
                size = UInt64(target.count)
                strings.append(contentsOf: target)
            case .directory:
                directories.append((node, number))
            }
            if node.kind == .regularFile, let digest = node.sha256 {
                digests.append(contentsOf: digest.digestBytes)
            } else {
                digests.append(contentsOf: Self.noDigest)
            }
            records.appendLE(parent)
            records.appendLE(UInt32(node.kind.rawValue))   // the kind byte, then three zero bytes
            records.appendLE(node.permissions & 0o7777)
            records.appendLE(UInt32(nameBytes.count))
            records.appendLE(nameOffset)
            records.appendLE(size)
            records.appendLE(node.modificationTime.seconds)
            records.appendLE(node.modificationTime.nanoseconds)
            records.appendLE(pack)
            records.appendLE(data)
            records.appendLE(targetCount)
            records.appendLE(UInt32(0))   // subdirectories: set with the children
        }

        /// A directory's child range, known once it is expanded.
        mutating func setChildren(of number: UInt32, first: UInt32, count: UInt32, subdirectories: UInt32) {
            typealias F = FileIndexLayout.Record
            let at = Int(number) * FileIndexLayout.recordSize
            records.withUnsafeMutableBytes { raw in
                raw.storeBytes(of: UInt64(first).littleEndian, toByteOffset: at + F.data, as: UInt64.self)
                raw.storeBytes(of: count.littleEndian, toByteOffset: at + F.count, as: UInt32.self)
                raw.storeBytes(of: subdirectories.littleEndian, toByteOffset: at + F.subdirectoryCount, as: UInt32.self)
            }
        }
    }

    /// A file's chunks must cover it exactly, in order, each 1...maximum bytes, with full digests.
    fileprivate static func check(_ chunks: [FileChunk], of node: Node, parameters: ContentChunking) throws(FileIndexError) {
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

    fileprivate func checkBlocks(_ hashes: [BlockHash], of node: Node) throws(FileIndexError) {
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

    fileprivate static func check(name: String, bytes: [UInt8]) throws(FileIndexError) {
        guard !bytes.isEmpty, name != ".", name != "..", !bytes.contains(UInt8(ascii: "/")), !bytes.contains(0) else {
            throw FileIndexError(.invalidTree, "invalid entry name '\(name)' (empty, '.', '..', or containing '/' or NUL)")
        }
    }
}

/// A file index as ``FileIndexWriter/encodeParts(root:)`` makes it: its parts in file order
/// (header, records, strings, digests, block or chunk table), never copied into one buffer
/// unless asked (``joined()``): ten million files make a 1 GB index.
public struct EncodedIndex: Sendable {
    /// The parts, in file order.
    public let parts: [[UInt8]]

    /// The index's size in bytes.
    public var byteCount: Int { parts.reduce(0) { $0 + $1.count } }

    /// The SHA-256 of the whole index (its name in a dist dir).
    public var sha256: ContentHash {
        var hasher = SHA256()
        for part in parts { hasher.update(data: part) }
        return ContentHash(digest: hasher.finalize())
    }

    /// The whole index in one buffer; for small indexes and tests.
    public func joined() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(byteCount)
        for part in parts { bytes.append(contentsOf: part) }
        return bytes
    }
}
