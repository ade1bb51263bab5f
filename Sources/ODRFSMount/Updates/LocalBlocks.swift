import ODRFSCore

/// The blocks of every large file the cache holds in the mounted revision, by hash (from the
/// mounted index's block table, version 3): where an update can copy a changed file's
/// unchanged blocks from, whichever file and pack held them (see ``PackAssemblyPlan``).
struct LocalBlocks: Sendable {
    /// Where a local pack holds a block: its pack, offset and length (the last block of a
    /// file is shorter, so the length is part of the match).
    struct Source: Sendable {
        var pack: PackNumber
        var offset: Int64
        var length: Int64
    }

    struct Key: Hashable, Sendable {
        var hash: BlockHash
        var length: Int64
    }

    let blockSize: Int64
    private var sources: [Key: Source]

    /// The blocks of the files in `local` packs of `mounted`; nil when either index has no
    /// block table or the two hash different block sizes (then updates stay file-granular).
    init?(mounted: FileIndex, local: Set<PackNumber>, available: FileIndex) {
        guard let size = mounted.blockSize, size == available.blockSize, size.value > 0, !local.isEmpty else { return nil }
        blockSize = size.value
        sources = [:]
        for number in mounted.filesWithBlockHashes {
            guard let entry = mounted.entry(number), let pack = entry.pack, local.contains(pack),
                  let hashes = mounted.blockHashes(of: number) else { continue }
            let fileSize = Int64(clamping: entry.size)
            for (k, hash) in hashes.enumerated() {
                // In bounds: the index validated size, offset and block count together.
                let start = Int64(k) * blockSize
                let length = min(blockSize, fileSize - start)
                let key = Key(hash: hash, length: length)
                if sources[key] == nil { sources[key] = Source(pack: pack, offset: entry.packOffset + start, length: length) }
            }
        }
        guard !sources.isEmpty else { return nil }
    }

    /// The blocks of `file` (of the available revision, whose block hashes are `hashes`)
    /// that a local pack holds, as copies into the new pack; nil when none match.
    func copies(for file: PackAssemblyPlan.File, hashes: [BlockHash]) -> [BlockCopy]? {
        let size = Int64(file.extent.count)
        var copies: [BlockCopy] = []
        for (k, hash) in hashes.enumerated() {
            let start = Int64(k) * blockSize
            guard start < size else { break }
            let length = min(blockSize, size - start)
            guard let source = sources[Key(hash: hash, length: length)] else { continue }
            copies.append(BlockCopy(target: file.extent.lowerBound + start, length: length, source: source.pack,
                                    sourceOffset: source.offset, expected: hash))
        }
        return copies.isEmpty ? nil : copies
    }
}

/// One block of a new pack copied from a local pack, trusted only once the copied bytes
/// hash to `expected` (the new index's hash of that block); otherwise it is fetched.
struct BlockCopy: Sendable, Equatable {
    var target: Int64
    var length: Int64
    var source: PackNumber
    var sourceOffset: Int64
    var expected: BlockHash
}
