import Crypto
import TestSupport
import Testing
@testable import ODRFSCore

/// The index's chunks placed in a pack (issue 27, item 4): what lets a download release a
/// large file a chunk at a time and prove a range on its own. Built from a validated index,
/// it still keeps only sorted, disjoint chunks inside the pack, and never trusts a chunk whose
/// bytes do not match.
@Suite struct PackChunkMapTests {
    @Test func chunksOfOnePackAtTheirPackOffsets() throws {
        let index = try FileIndex(bytes: FileIndexChunkTests.valid)
        let map = PackChunkMap(index: index, pack: PackNumber(0), packBytes: 1_002_000)
        // big.bin (pack 0, at 512); other.bin is in pack 1; small.txt has no chunks.
        #expect(map.chunks.map(\.range) == FileIndexChunkTests.bigChunks.map { (512 + $0.offset)..<(512 + $0.offset + $0.length) })
        #expect(map.chunks.map(\.digest) == FileIndexChunkTests.bigChunks.map(\.digest))
        let other = PackChunkMap(index: index, pack: PackNumber(1), packBytes: 400_000)
        #expect(other.chunks.first?.range.lowerBound == 512 && other.chunks.last?.range.upperBound == 300_512)
        // A pack too short for the file keeps only the chunks inside it.
        let short = PackChunkMap(index: index, pack: PackNumber(0), packBytes: 600_000)
        #expect(!short.chunks.isEmpty && short.chunks.allSatisfy { $0.range.upperBound <= 600_000 })
        #expect(PackChunkMap(index: index, pack: PackNumber(7), packBytes: 1 << 20).isEmpty)
    }

    @Test func overlappingOutOfPackAndEmptyChunksAreLeftOut() {
        let digest = ChunkDigest(sha256: SHA256.hash(data: [0]))
        let map = PackChunkMap(chunks: [
            .init(range: 100..<200, digest: digest),
            .init(range: 0..<50, digest: digest),
            .init(range: 150..<250, digest: digest),   // overlaps the first kept
            .init(range: 900..<1_100, digest: digest), // past the pack
            .init(range: -10..<10, digest: digest),
            .init(range: 300..<300, digest: digest),
            .init(range: 200..<260, digest: digest),
        ], packBytes: 1_000)
        #expect(map.chunks.map(\.range) == [0..<50, 100..<200, 200..<260])
        #expect(map.chunks(overlapping: 40..<101).map(\.range) == [0..<50, 100..<200])
        #expect(map.chunks(overlapping: 50..<100).isEmpty)
        #expect(map.firstChunk(endingAfter: 199) == 1 && map.firstChunk(endingAfter: 200) == 2 && map.firstChunk(endingAfter: 500) == 3)
    }

    @Test func onlyChunksWhollyInsideThatMatchAreVerified() {
        let bytes = (0..<1_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        func digest(_ range: Range<Int>) -> ChunkDigest { ChunkDigest(sha256: SHA256.hash(data: bytes[range])) }
        let map = PackChunkMap(chunks: [
            .init(range: 0..<100, digest: digest(0..<100)),
            .init(range: 100..<300, digest: digest(100..<300)),
            .init(range: 300..<400, digest: digest(0..<100)),   // lies
            .init(range: 400..<700, digest: digest(400..<700)),
        ], packBytes: 1_000)
        // Bytes 50..<650: chunk 0 starts before them, chunk 3 ends after them.
        let (verified, through) = bytes[50..<650].withUnsafeBytes { map.verifiedRanges(in: $0, at: 50) }
        #expect(verified == [100..<300])
        #expect(through == 400, "the lying chunk is considered (left to the manifest), the cut one is not")
        var tampered = bytes
        tampered[150] ^= 1
        #expect(tampered.withUnsafeBytes { map.verifiedRanges(in: $0, at: 0) }.verified == [0..<100, 400..<700])
        let (pieces, end) = bytes.withUnsafeBytes { map.verifiedPieces(of: $0, at: 0) }
        #expect(pieces.map(\.0) == [0, 100, 400] && end == 700)
        #expect(pieces.allSatisfy { $0.1 == Array(bytes[Int($0.0)..<(Int($0.0) + $0.1.count)]) })
    }
}
