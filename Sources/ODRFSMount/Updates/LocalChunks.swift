import ODRFSCore

/// The chunks of every large file the cache holds, by digest: content-defined chunks from a
/// version-4 index, fixed blocks from a version-3 one (``FileIndex/chunks(of:)``). Where an
/// update can copy a changed file's unchanged chunks from, whichever file, pack, revision
/// or bundle held them, wherever in the file they moved (see ``PackAssemblyPlan``).
struct LocalChunks: Sendable {
    /// Where a local pack holds a chunk: the pack (a slot of ``packs``) and the chunk's
    /// offset in it. Small, as there is one per chunk of every large local file.
    struct Source: Sendable {
        var pack: Int32
        var offset: Int64
    }

    /// A chunk's digest and length: a digest of one kind over bytes of one length.
    struct Key: Hashable, Sendable {
        var digest: ChunkDigest
        var length: Int64
    }

    private var sources: [Key: Source] = [:]
    /// The packs sources name, each once.
    private var packs: [PackDescriptor] = []
    private var slots: [ContentHash: Int32] = [:]

    var isEmpty: Bool { sources.isEmpty }

    /// Adds the chunks of the files of `index` whose packs `local` says are on disk (nil
    /// for a pack that is not): the first source found for a chunk is kept.
    mutating func add(_ index: FileIndex, local: (PackNumber) -> PackDescriptor?) {
        for number in index.filesWithChunks {
            guard let entry = index.entry(number), let pack = entry.pack, let descriptor = local(pack),
                  let chunks = index.chunks(of: number) else { continue }
            let slot = slots[descriptor.sha256] ?? {
                packs.append(descriptor)
                slots[descriptor.sha256] = Int32(packs.count - 1)
                return Int32(packs.count - 1)
            }()
            for chunk in chunks {
                // In bounds: the index validated size, offset and chunks together.
                let key = Key(digest: chunk.digest, length: chunk.length)
                if sources[key] == nil { sources[key] = Source(pack: slot, offset: entry.packOffset + chunk.offset) }
            }
        }
    }

    /// The chunks of `file` (of the available revision, whose chunks are `chunks`) that a
    /// local pack holds, as copies into the new pack; nil when none match.
    func copies(for file: PackAssemblyPlan.File, chunks: [FileChunk]) -> [BlockCopy]? {
        let size = Int64(file.extent.count)
        var copies: [BlockCopy] = []
        for chunk in chunks where chunk.offset + chunk.length <= size {
            guard let source = sources[Key(digest: chunk.digest, length: chunk.length)] else { continue }
            copies.append(BlockCopy(target: file.extent.lowerBound + chunk.offset, length: chunk.length, source: packs[Int(source.pack)],
                                    sourceOffset: source.offset, expected: chunk.digest))
        }
        return copies.isEmpty ? nil : copies
    }
}

/// One chunk of a new pack copied from a local pack, trusted only once the copied bytes
/// hash to `expected` (the new index's digest of that chunk); otherwise it is fetched.
struct BlockCopy: Sendable, Equatable {
    var target: Int64
    var length: Int64
    var source: PackDescriptor
    var sourceOffset: Int64
    var expected: ChunkDigest
}
