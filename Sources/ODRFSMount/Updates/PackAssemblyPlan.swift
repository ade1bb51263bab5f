import ODRFSCore

/// How one changed pack is put together locally: which spans are copied from packs the
/// cache holds, whether the tar headers can be written from the new index, and which
/// spans must come from the origin.
///
/// Three sources of local bytes, tried in this order:
/// 1. whole files: a file of the new pack whose SHA-256 and size equal those of a file in
///    a local pack of the mounted revision (``UpdatePlan`` finds them);
/// 2. the tar framing: `odrfs build` writes a deterministic tar (``TarWriter``) from each
///    file's path, size, mode and mtime, all of which the new index holds, so headers,
///    padding and the end-of-archive blocks are rebuilt here when replaying the writer
///    over the pack's files lands every file exactly at its recorded offset;
/// 3. whole chunks: a chunk of the new pack whose hash equals a chunk of a local pack
///    (same chunk size), which catches a large file changed in a few places;
/// 4. file chunks (index versions 3 and 4): a content-defined chunk (or fixed block) of a
///    large file of the new pack whose digest equals one of a file in a local pack
///    (``LocalChunks``), so a change costs the chunks it touched, wherever an insertion or
///    deletion moved the rest; each copied chunk is checked against its digest.
/// What is left is fetched by HTTP range, except where the mounted revision has a file of
/// the same path and size in a local pack and no chunks: its old bytes are copied in as a guess
/// (``speculative``), and only the guessed spans inside chunks that then fail their hash
/// are fetched — a large file changed in a few places costs the chunks it changed in.
/// None of this is trusted: the assembled pack is verified against the new manifest's
/// chunk hashes before it is published.
struct PackAssemblyPlan: Sendable {
    /// One file of the new pack, in pack order.
    struct File: Sendable {
        var entry: EntryNumber
        var extent: Range<Int64>
    }

    /// The pack's files, sorted by offset (for rebuilding the framing).
    var files: [File]
    /// Copies from local packs, possibly overlapping the rebuilt framing (same bytes).
    var reused: [UpdatePlan.ReusedSpan]
    /// Whether every byte outside the files' contents is rebuilt from the index.
    var rebuildsFraming: Bool
    /// Spans to download: sorted, disjoint, non-empty. Speculative spans are among them
    /// (the plan's byte counts are an upper bound); the assembler fetches those only
    /// where their chunk fails.
    var remote: [Range<Int64>]
    /// Guesses for remote spans: the same path's old bytes.
    var speculative: [UpdatePlan.ReusedSpan]
    /// File chunks copied from local packs, each used only if it hashes as the new index says.
    var blocks: [BlockCopy] = []

    var remoteBytes: Int64 { remote.reduce(0) { $0 + ($1.upperBound - $1.lowerBound) } }

    /// `chunkSources`: chunk hash → where a local pack of the mounted revision holds it
    /// (empty when the chunk sizes differ).
    static func make(pack: PackDescriptor, chunkSize: ByteCount, files: [File], fileReuse: [UpdatePlan.ReusedSpan],
                     framingMatches: Bool, chunkSources: [ContentHash: ChunkSource],
                     blockCopies: (File) -> [BlockCopy]? = { _ in nil },
                     previousVersion: (File) -> UpdatePlan.ReusedSpan?) -> PackAssemblyPlan {
        let bytes = pack.bytes.value
        var needed: [Range<Int64>] = framingMatches ? files.map(\.extent).filter { !$0.isEmpty } : (bytes > 0 ? [0..<bytes] : [])
        var reused = fileReuse
        needed = subtract(fileReuse.map { $0.target..<($0.target + $0.length) }.sorted { $0.lowerBound < $1.lowerBound }, from: needed)
        let size = chunkSize.value
        if size > 0, !chunkSources.isEmpty {
            var chunkRanges: [Range<Int64>] = []
            for (index, hash) in pack.chunks.enumerated() {
                let (start, overflow) = Int64(index).multipliedReportingOverflow(by: size)
                guard !overflow, start < bytes else { break }
                let range = start..<min(start + min(size, bytes - start), bytes)
                guard let source = chunkSources[hash], source.length == Int64(range.count),
                      needed.contains(where: { $0.overlaps(range) }) else { continue }
                reused.append(UpdatePlan.ReusedSpan(target: range.lowerBound, length: source.length,
                                                    source: source.pack, sourceOffset: source.offset))
                chunkRanges.append(range)
            }
            needed = subtract(chunkRanges, from: needed)
        }
        var blocks: [BlockCopy] = []
        var blockPlanned: Set<EntryNumber> = []
        var n = 0
        for file in files {
            while n < needed.count && needed[n].upperBound <= file.extent.lowerBound { n += 1 }
            guard n < needed.count, needed[n].overlaps(file.extent), let copies = blockCopies(file) else { continue }
            blockPlanned.insert(file.entry)
            blocks.append(contentsOf: copies.filter { copy in
                let range = copy.target..<(copy.target + copy.length)
                return needed[n...].prefix { $0.lowerBound < range.upperBound }.contains { $0.overlaps(range) }
            })
        }
        needed = subtract(blocks.map { $0.target..<($0.target + $0.length) }, from: needed)
        var speculative: [UpdatePlan.ReusedSpan] = []
        n = 0
        for file in files where !blockPlanned.contains(file.entry) {
            while n < needed.count && needed[n].upperBound <= file.extent.lowerBound { n += 1 }
            guard n < needed.count, needed[n].overlaps(file.extent), let guess = previousVersion(file) else { continue }
            speculative.append(guess)
        }
        return PackAssemblyPlan(files: files, reused: reused, rebuildsFraming: framingMatches, remote: needed,
                                speculative: speculative, blocks: blocks)
    }

    /// Where a local pack holds a chunk.
    struct ChunkSource: Sendable {
        var pack: PackNumber
        var offset: Int64
        var length: Int64
    }

    /// Whether replaying ``TarWriter`` over `files` (sorted by offset) reproduces every
    /// content offset and the pack's size: then the framing can be rebuilt locally.
    static func framingMatches(pack: PackDescriptor, files: [File], index: FileIndex) -> Bool {
        var tar = TarWriter()
        for file in files {
            guard let entry = index.entry(file.entry) else { return false }
            let (_, contentOffset) = tar.beginFile(path: index.path(of: file.entry), size: entry.size,
                                                   permissions: entry.permissions, modificationTime: entry.modificationTime)
            guard contentOffset == UInt64(file.extent.lowerBound) else { return false }
            _ = tar.endFile()
        }
        _ = tar.finish()
        return tar.offset == UInt64(pack.bytes.value)
    }

    /// The ranges covered by `a` or `b` (each sorted and disjoint), sorted and disjoint.
    static func union(_ a: [Range<Int64>], _ b: [Range<Int64>]) -> [Range<Int64>] {
        guard !b.isEmpty else { return a }
        var result: [Range<Int64>] = []
        for range in (a + b).sorted(by: { $0.lowerBound < $1.lowerBound }) where !range.isEmpty {
            if let last = result.last, range.lowerBound <= last.upperBound {
                result[result.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
            } else {
                result.append(range)
            }
        }
        return result
    }

    /// `ranges` minus `holes`; both sorted by lower bound, each list disjoint.
    static func subtract(_ holes: [Range<Int64>], from ranges: [Range<Int64>]) -> [Range<Int64>] {
        var result: [Range<Int64>] = []
        var h = 0
        for range in ranges {
            var start = range.lowerBound
            while h < holes.count && holes[h].upperBound <= start { h += 1 }
            var k = h
            while start < range.upperBound {
                guard k < holes.count, holes[k].lowerBound < range.upperBound else {
                    result.append(start..<range.upperBound)
                    break
                }
                if holes[k].lowerBound > start { result.append(start..<holes[k].lowerBound) }
                start = max(start, holes[k].upperBound)
                k += 1
            }
        }
        return result
    }
}
