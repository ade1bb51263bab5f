import Crypto
import TestSupport
import Testing
@testable import ODRFSCore

/// Content-defined chunking (FastCDC): boundaries that depend on the content only, so an
/// insertion or deletion changes the chunks around the edit and no other.
@Suite struct ContentChunkerTests {
    static func noise(_ count: Int, seed: UInt64) -> [UInt8] {
        var generator = SplitMix(seed: seed)
        return (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
    }

    /// The chunks of `bytes`, fed in pieces of `piece` bytes.
    static func chunks(_ bytes: [UInt8], piece: Int = 1 << 20, _ parameters: ContentChunking = .standard) -> [ContentChunker.Chunk] {
        var chunker = ContentChunker(parameters)
        bytes.withUnsafeBytes { raw in
            var start = 0
            while start < raw.count {
                let end = min(start + piece, raw.count)
                chunker.update(UnsafeRawBufferPointer(rebasing: raw[start..<end]))
                start = end
            }
        }
        return chunker.finalize()
    }

    static let data = noise(8 << 20, seed: 7)

    @Test func chunksCoverTheStreamWithinTheBoundsAndHashTheirBytes() {
        let chunks = Self.chunks(Self.data)
        var start = 0
        for (n, chunk) in chunks.enumerated() {
            let length = Int(chunk.end) - start
            #expect(length <= 256 << 10, "chunk \(n) is \(length) bytes")
            if n < chunks.count - 1 { #expect(length >= 16 << 10, "chunk \(n) is \(length) bytes") }
            #expect(chunk.digest == ChunkDigest(sha256: SHA256.hash(data: Self.data[start..<Int(chunk.end)])))
            start = Int(chunk.end)
        }
        #expect(start == Self.data.count)
        // About 64 KiB on average (FastCDC with normalization lands a little above it).
        let average = Self.data.count / chunks.count
        #expect(average > 48 << 10 && average < 96 << 10, "average chunk \(average) bytes over \(chunks.count) chunks")
    }

    @Test(arguments: [1, 4095, 65_536, 1 << 20])
    func theCutsDoNotDependOnHowTheBytesArrive(piece: Int) {
        #expect(Self.chunks(Array(Self.data.prefix(1 << 20)), piece: piece) == Self.chunks(Array(Self.data.prefix(1 << 20))))
    }

    /// Digests of `edited`'s chunks that `original` lacks, and the bytes they cover.
    static func changedBytes(_ original: [UInt8], _ edited: [UInt8]) -> (chunks: Int, bytes: Int) {
        let old = Set(chunks(original).map(\.digest))
        var start: UInt64 = 0
        var changed = (chunks: 0, bytes: 0)
        for chunk in chunks(edited) {
            if !old.contains(chunk.digest) { changed = (changed.chunks + 1, changed.bytes + Int(chunk.end - start)) }
            start = chunk.end
        }
        return changed
    }

    @Test func anInsertionChangesOnlyTheChunksAroundIt() {
        var inserted = Self.data
        inserted.insert(contentsOf: Self.noise(100, seed: 99), at: 200_000)
        let changed = Self.changedBytes(Self.data, inserted)
        #expect(changed.chunks >= 1 && changed.chunks <= 3, "\(changed)")
        #expect(changed.bytes <= 3 * (256 << 10), "\(changed)")
    }

    @Test func aDeletionChangesOnlyTheChunksAroundIt() {
        var deleted = Self.data
        deleted.removeSubrange(3_000_000..<(3_000_000 + (4 << 20)))
        let changed = Self.changedBytes(Self.data, deleted)
        #expect(changed.chunks <= 2, "\(changed)")
        // And a fixed grid would have changed every block after the edit.
        #expect(changed.bytes <= 2 * (256 << 10), "\(changed)")
    }

    @Test func anOverwriteChangesTheChunksItTouches() {
        var overwritten = Self.data
        for i in 4_000_000..<(4_000_000 + (1 << 20)) { overwritten[i] = ~overwritten[i] }
        let changed = Self.changedBytes(Self.data, overwritten)
        #expect(changed.bytes >= 1 << 20 && changed.bytes <= (1 << 20) + 2 * (256 << 10), "\(changed)")
    }

    @Test func emptyAndTinyStreams() {
        #expect(Self.chunks([]).isEmpty)
        let one = Self.chunks([42])
        #expect(one.count == 1 && one[0].end == 1 && one[0].digest == ChunkDigest(sha256: SHA256.hash(data: [42])))
    }

    @Test func invalidParametersAreReplacedByTheStandardOnes() {
        #expect(!ContentChunking(minimum: 1, average: 64 << 10, maximum: 256 << 10).isValid)
        #expect(!ContentChunking(minimum: 16 << 10, average: 60_000, maximum: 256 << 10).isValid)
        #expect(!ContentChunking(minimum: 128 << 10, average: 64 << 10, maximum: 256 << 10).isValid)
        // Found in review: with minimum = maximum the chunker hashed one byte past the maximum.
        #expect(!ContentChunking(minimum: 1024, average: 1024, maximum: 1024).isValid)
        let tight = ContentChunking(minimum: 1024, average: 1024, maximum: 2048)
        #expect(tight.isValid)
                var start: UInt64 = 0
        for chunk in Self.chunks(Array(Self.data.prefix(1 << 20)), piece: 777, tight) {
            #expect(chunk.end - start <= 2048 && (chunk.end == 1 << 20 || chunk.end - start >= 1024))
            start = chunk.end
        }
        #expect(ContentChunker(ContentChunking(minimum: 0, average: 0, maximum: 0)).parameters == .standard)
        #expect(ContentChunking.standard.isValid)
    }

    /// The gear table is part of the format (a later build must cut where this one did):
    /// pinned by its first values and a chunking of fixed input.
    @Test func theGearTableAndTheCutsArePinned() {
        #expect(ContentChunker.gear.count == 256)
        #expect(ContentChunker.gear[0] == 0xE220_A839_7B1D_CDAF)
        let ends = Self.chunks(Self.noise(1 << 20, seed: 1)).map(\.end)
        #expect(ends == Self.pinnedEnds, "\(ends)")
    }

    static let pinnedEnds: [UInt64] = [132_811, 156_294, 271_495, 340_495, 441_689, 463_468, 548_634, 617_327, 689_316, 951_460, 1_024_795, 1_048_576]
}
