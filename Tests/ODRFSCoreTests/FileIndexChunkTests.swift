import TestSupport
import Testing
@testable import ODRFSCore

/// The chunk table (index version 4): content-defined chunks of large files read back
/// exactly; indexes of versions 1 to 3 still load; a hostile table is refused, never read
/// out of bounds.
@Suite struct FileIndexChunkTests {
    typealias Node = FileIndexWriter.Node
    typealias C = FileIndexLayout.Chunks

    static func chunks(size: Int, seed: UInt64) -> [FileChunk] {
        var generator = SplitMix(seed: seed)
        let bytes = (0..<size).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        var chunker = ContentChunker(.standard)
        bytes.withUnsafeBytes { chunker.update($0) }
        var start: Int64 = 0
        return chunker.finalize().map { chunk in
            defer { start = Int64(chunk.end) }
            return FileChunk(offset: start, length: Int64(chunk.end) - start, digest: chunk.digest)
        }
    }

    static let bigChunks = chunks(size: 1_000_000, seed: 1)
    static let otherChunks = chunks(size: 300_000, seed: 2)

    static func tree() -> Node {
        var big = Node.file("big.bin", size: 1_000_000, pack: PackNumber(0), dataOffset: 512)
        big.chunks = bigChunks
        var other = Node.file("other.bin", size: 300_000, pack: PackNumber(1), dataOffset: 512)
        other.chunks = otherChunks
        return .directory("", children: [
            big,
            .directory("d", children: [other, .symlink("link", target: "other.bin")]),
            .file("small.txt", size: 3, pack: PackNumber(0), dataOffset: 1_001_472),
        ])
    }

    static let valid: [UInt8] = try! FileIndexWriter(packCount: 2).encode(root: tree())

    static func tableStart(_ bytes: [UInt8]) -> Int { FileIndexBlockTests.blocksStart(bytes) }

    @Test func chunksRoundTrip() throws {
        let index = try FileIndex(bytes: Self.valid)
        #expect(index.version == 4)
        #expect(index.chunking == .contentDefined(.standard))
        let big = try #require(index.lookup(path: "big.bin")), other = try #require(index.lookup(path: "d/other.bin"))
        #expect(index.chunks(of: big) == Self.bigChunks)
        #expect(index.chunks(of: other) == Self.otherChunks)
        #expect(index.filesWithChunks == [big, other])
        #expect(index.chunks(of: try #require(index.lookup(path: "small.txt"))) == nil)
        #expect(index.chunks(of: .root) == nil)
        #expect(index.chunks(of: EntryNumber(UInt32(index.entryCount))) == nil)
        // Version 4 has no fixed blocks.
        #expect(index.blockHashes(of: big) == nil && index.blockSize == nil)
        // The chunk holding any offset, by binary search.
        for chunk in Self.bigChunks {
            for offset in [chunk.offset, chunk.offset + chunk.length / 2, chunk.offset + chunk.length - 1] {
                #expect(index.chunk(of: big, containing: offset) == chunk)
            }
        }
        #expect(index.chunk(of: big, containing: 1_000_000) == nil)
        #expect(index.chunk(of: big, containing: -1) == nil)
    }

    @Test func versionThreeIndexesReadAsFixedBlocks() throws {
        let index = try FileIndex(bytes: FileIndexBlockTests.valid)
        #expect(index.version == 3)
        #expect(index.chunking == .fixedBlocks(.kibibytes(64)))
        let big = try #require(index.lookup(path: "big.bin"))
        let chunks = try #require(index.chunks(of: big))
        #expect(chunks.map(\.length) == [65_536, 65_536, 65_536, 65_536, 300_000 - 4 * 65_536])
        #expect(chunks.map(\.digest) == FileIndexBlockTests.bigHashes.map { ChunkDigest(block: $0) })
        #expect(index.chunk(of: big, containing: 200_000) == chunks[3])
        // Found by the fileindex fuzz target: the file's size divided by the block size
        // lands in the short last block, which does not hold it.
        #expect(index.chunk(of: big, containing: 300_000) == nil)
        #expect(index.chunk(of: big, containing: 299_999) == chunks[4])
        #expect(index.filesWithChunks == index.filesWithBlockHashes)
    }

    @Test func aVersionFourIndexWithoutLargeFilesHasNoTable() throws {
        let bytes = try FileIndexWriter(packCount: 1).encode(root: .directory("", children: [
            .file("a", size: 10, pack: PackNumber(0), dataOffset: 512),
        ]))
        let index = try FileIndex(bytes: bytes)
        #expect(index.version == 4 && index.chunking == nil && index.filesWithChunks.isEmpty)
    }

    @Test func theWriterRefusesChunksThatDoNotCoverTheFile() {
        var short = Node.file("big.bin", size: 1_000_000, pack: PackNumber(0), dataOffset: 512)
        short.chunks = Array(Self.bigChunks.dropLast())
        #expect(throws: FileIndexError.self) { try FileIndexWriter(packCount: 1).encode(root: .directory("", children: [short])) }
        var gap = short
        gap.chunks = Self.bigChunks
        gap.chunks![1].offset += 1
        #expect(throws: FileIndexError.self) { try FileIndexWriter(packCount: 1).encode(root: .directory("", children: [gap])) }
        var mixed = short
        mixed.chunks = nil
        mixed.blockHashes = FileIndexBlockTests.bigHashes
        #expect(throws: FileIndexError.self) { try FileIndexWriter(packCount: 1).encode(root: .directory("", children: [mixed])) }
    }

    @Test func hostileChunkTablesAreRefused() throws {
        let start = Self.tableStart(Self.valid)
        let patched32 = FileIndexBlockTests.patched32, patched64 = FileIndexBlockTests.patched64
        let rows = start + C.headerSize
        let chunks = rows + 2 * C.rowSize
        let secondRowChunks = UInt64(Self.bigChunks.count)
        let cases: [(String, [UInt8])] = [
            ("unknown algorithm", patched32(Self.valid, start + C.algorithm, 2)),
            ("minimum above average", patched32(Self.valid, start + C.minimum, 128 << 10)),
            ("average not a power of two", patched32(Self.valid, start + C.average, 65_000)),
            ("maximum too large", patched32(Self.valid, start + C.maximum, 32 << 20)),
            ("maximum below a chunk", patched32(Self.valid, start + C.maximum, 64 << 10)),
            ("hash size 16", patched32(Self.valid, start + C.hashSize, 16)),
            ("nonzero reserved", patched64(Self.valid, start + C.reserved, 1)),
            ("more files than rows", patched32(Self.valid, start + C.fileCount, 3)),
            ("huge file count", patched32(Self.valid, start + C.fileCount, UInt32.max)),
            ("one file, its chunks too many", patched32(Self.valid, start + C.fileCount, 1)),
            ("row naming a directory", patched32(Self.valid, rows + C.rowEntry, 0)),
            ("row naming the symlink", patched32(Self.valid, rows + C.rowSize + C.rowEntry, 4)),
            ("rows out of order", patched32(Self.valid, rows + C.rowEntry, 100)),
            ("first row not at chunk 0", patched64(Self.valid, rows + C.rowFirstChunk, 1)),
            ("second row before the first", patched64(Self.valid, rows + C.rowSize + C.rowFirstChunk, 0)),
            ("second row past the end", patched64(Self.valid, rows + C.rowSize + C.rowFirstChunk, UInt64.max)),
            ("second row one late", patched64(Self.valid, rows + C.rowSize + C.rowFirstChunk, secondRowChunks + 1)),
            ("nonzero row reserved", patched32(Self.valid, rows + C.rowReserved, 1)),
            ("chunk ends at 0", patched64(Self.valid, chunks + C.chunkEnd, 0)),
            ("chunk ends past the next", patched64(Self.valid, chunks + C.chunkEnd, 999_999)),
            ("last chunk short of the file", patched64(Self.valid, chunks + (Self.bigChunks.count - 1) * C.chunkSize + C.chunkEnd, 999_999)),
            ("chunk longer than the maximum", patched64(Self.valid, chunks + C.chunkEnd, 300_000)),
            ("a byte of slack", Self.valid + [0]),
            ("half a chunk cut off", Array(Self.valid.dropLast(20))),
            ("header only, cut", Array(Self.valid.prefix(start + 10))),
        ]
        for (name, bytes) in cases {
            #expect(throws: FileIndexError.self, "\(name)") { try FileIndex(bytes: bytes) }
        }
        // The same fields in range read back: the patches above are what break them.
        #expect(try FileIndex(bytes: patched32(Self.valid, start + C.minimum, 8 << 10)).chunking
            == .contentDefined(ContentChunking(minimum: 8 << 10, average: 64 << 10, maximum: 256 << 10)))
    }

    @Test func randomDamageNeverTrapsOrMisreads() throws {
        var generator = SplitMix(seed: 4)
        let start = Self.tableStart(Self.valid)
        for _ in 0..<2_000 {
            var bytes = Self.valid
            for _ in 0..<Int(generator.next() % 4 + 1) {
                let at = start + Int(generator.next() % UInt64(bytes.count - start))
                bytes[at] = UInt8(truncatingIfNeeded: generator.next())
            }
            guard let index = try? FileIndex(bytes: bytes) else { continue }
            for number in index.filesWithChunks {
                let size = Int64(try #require(index.entry(number)).size)
                let chunks = try #require(index.chunks(of: number))
                #expect(chunks.reduce(0) { $0 + $1.length } == size)
                #expect(chunks.allSatisfy { $0.length >= 1 })
            }
        }
    }
}

/// Found by the fileindex fuzz target: a name that starts with a combining mark.
@Suite struct FileIndexCombiningNameTests {
    @Test func aNameStartingWithACombiningMarkIsFoundByPath() throws {
        let bytes = try FileIndexWriter(packCount: 1).encode(root: .directory("", children: [
            .directory("Voice", children: [.file("\u{0489}xt1Hi#t", size: 1, pack: PackNumber(0), dataOffset: 512)]),
        ]))
        let index = try FileIndex(bytes: bytes)
        let voice = try #require(index.lookup(path: "Voice"))
        let file = try #require(index.lookup(parent: voice, name: "\u{0489}xt1Hi#t"))
        #expect(index.path(of: file) == "Voice/\u{0489}xt1Hi#t")
        #expect(index.lookup(path: index.path(of: file)) == file)
        #expect(index.lookup(path: "./Voice//\u{0489}xt1Hi#t") == file)
    }
}
