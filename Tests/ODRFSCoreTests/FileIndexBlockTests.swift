import TestSupport
import Testing
@testable import ODRFSCore

/// The block table (index version 3): per-block hashes of large files read back exactly;
/// version-2 indexes without one still load; a hostile table is refused, never read out of
/// bounds.
@Suite struct FileIndexBlockTests {
    typealias Node = FileIndexWriter.Node
    static let blockSize: Int64 = 64 << 10

    /// `size` bytes' block hashes, as the builder records them.
    static func hashes(size: Int, seed: UInt8) -> [BlockHash] {
        let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
        var hasher = BlockHasher(blockSize: ByteCount(blockSize))
        bytes.withUnsafeBytes { hasher.update($0) }
        return hasher.finalize()
    }

    static let bigHashes = hashes(size: 300_000, seed: 1)      // 5 blocks, the last one short
    static let exactHashes = hashes(size: 4 * 65_536, seed: 2)  // 4 whole blocks

    static func tree() -> Node {
        var big = Node.file("big.bin", size: 300_000, pack: PackNumber(0), dataOffset: 512)
        big.blockHashes = bigHashes
        var exact = Node.file("exact.bin", size: 4 * 65_536, pack: PackNumber(1), dataOffset: 512)
        exact.blockHashes = exactHashes
        return .directory("", children: [
            big,
            .directory("d", children: [exact, .symlink("link", target: "exact.bin")]),
            .file("small.txt", size: 3, pack: PackNumber(0), dataOffset: 301_568),
        ])
    }

    static let valid: [UInt8] = try! FileIndexWriter(packCount: 2, blockSize: ByteCount(blockSize)).encode(root: tree())

    /// Where the block table starts: right after the digest table.
    static func blocksStart(_ bytes: [UInt8]) -> Int {
        let (digests, count) = bytes.withUnsafeBytes {
            (Int($0.baseAddress!.u64(FileIndexLayout.Header.digestsOffset)), Int($0.baseAddress!.u32(FileIndexLayout.Header.entryCount)))
        }
        return digests + count * FileIndexLayout.digestSize
    }

    static func patched32(_ bytes: [UInt8], _ offset: Int, _ value: UInt32) -> [UInt8] {
        var bytes = bytes
        withUnsafeBytes(of: value.littleEndian) { for (i, b) in $0.enumerated() { bytes[offset + i] = b } }
        return bytes
    }

    static func patched64(_ bytes: [UInt8], _ offset: Int, _ value: UInt64) -> [UInt8] {
        var bytes = bytes
        withUnsafeBytes(of: value.littleEndian) { for (i, b) in $0.enumerated() { bytes[offset + i] = b } }
        return bytes
    }

    @Test func blockHashesRoundTrip() throws {
        let index = try FileIndex(bytes: Self.valid)
        #expect(Self.valid[FileIndexLayout.Header.version] == 3)
        #expect(index.blockSize == ByteCount(Self.blockSize))
        let big = try #require(index.lookup(path: "big.bin"))
        let exact = try #require(index.lookup(path: "d/exact.bin"))
        #expect(index.blockHashes(of: big) == Self.bigHashes)
        #expect(Self.bigHashes.count == 5)
        #expect(index.blockHashes(of: exact) == Self.exactHashes)
        #expect(Self.exactHashes.count == 4)
        #expect(index.filesWithBlockHashes == [big, exact])
        #expect(index.blockHashes(of: try #require(index.lookup(path: "small.txt"))) == nil)
        #expect(index.blockHashes(of: try #require(index.lookup(path: "d/link"))) == nil)
        #expect(index.blockHashes(of: .root) == nil)
        #expect(index.blockHashes(of: EntryNumber(UInt32(index.entryCount))) == nil)
        // The table is the last section: header, two rows, nine hashes.
        #expect(Self.blocksStart(Self.valid) + 16 + 2 * 16 + 9 * 16 == Self.valid.count)
    }

    /// The streaming hasher cuts blocks at fixed offsets of the file, however the bytes arrive.
    @Test func blockHasherIsIndependentOfReadSizes() {
        let bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 1) }
        var hasher = BlockHasher(blockSize: ByteCount(Self.blockSize))
        var at = 0
        for piece in [1, 65_535, 70_000, 3, 100_000] {
            bytes[at..<(at + piece)].withUnsafeBytes { hasher.update($0) }
            at += piece
        }
        bytes[at...].withUnsafeBytes { hasher.update($0) }
        let expected = stride(from: 0, to: bytes.count, by: Int(Self.blockSize)).map {
            BlockHash.of(Array(bytes[$0..<min($0 + Int(Self.blockSize), bytes.count)]))
        }
        #expect(hasher.finalize() == expected)
        #expect(expected == Self.bigHashes)
    }

    /// Without large files the index has no block table and ends with the digest table.
    @Test func noTableWithoutLargeFiles() throws {
        let bytes = try FileIndexWriter(packCount: 1).encode(root: .directory("", children: [
            .file("a", size: 3, pack: PackNumber(0), dataOffset: 512)]))
        #expect(Self.blocksStart(bytes) == bytes.count)
        let index = try FileIndex(bytes: bytes)
        #expect(index.blockSize == nil)
        #expect(index.filesWithBlockHashes.isEmpty)
    }

    /// A version-2 index (written before block tables) loads, without block hashes, and
    /// trailing bytes after its digest table are not read as one.
    @Test func versionTwoIndexStillLoads() throws {
        var old = Array(Self.valid.prefix(Self.blocksStart(Self.valid)))
        old[FileIndexLayout.Header.version] = 2
        let index = try FileIndex(bytes: old)
        #expect(index.blockSize == nil)
        #expect(index.blockHashes(of: try #require(index.lookup(path: "big.bin"))) == nil)
        #expect(index.sha256(of: try #require(index.lookup(path: "big.bin"))) == nil)
        var trailing = Self.valid
        trailing[FileIndexLayout.Header.version] = 2
        #expect(try FileIndex(bytes: trailing).blockSize == nil)
    }

    @Test func writerRefusesInconsistentBlocks() {
        var wrong = Node.file("big.bin", size: 300_000, pack: PackNumber(0), dataOffset: 512)
        wrong.blockHashes = Array(Self.bigHashes.dropLast())
        #expect(throws: FileIndexError.self) { try FileIndexWriter(packCount: 1).encode(root: .directory("", children: [wrong])) }
        var good = wrong
        good.blockHashes = Self.bigHashes
        #expect(throws: FileIndexError.self) {
            try FileIndexWriter(packCount: 1, blockSize: ByteCount(65_537)).encode(root: .directory("", children: [good]))
        }
    }

    @Test func hostileBlockTablesAreRefused() throws {
        typealias B = FileIndexLayout.Blocks
        let start = Self.blocksStart(Self.valid)
        let row0 = start + B.headerSize, row1 = row0 + B.rowSize
        let index = try FileIndex(bytes: Self.valid)
        let big = try #require(index.lookup(path: "big.bin")).rawValue
        let cases: [(String, [UInt8])] = [
            ("truncated hash array", Array(Self.valid.dropLast())),
            ("one spare byte", Self.valid + [0]),
            ("one spare hash", Self.valid + [UInt8](repeating: 0, count: 16)),
            ("shorter than its header", Array(Self.valid.prefix(start + 8))),
            ("block size not a power of two", Self.patched32(Self.valid, start + B.blockSize, 65_537)),
            ("block size too small", Self.patched32(Self.valid, start + B.blockSize, 1)),
            ("block size zero", Self.patched32(Self.valid, start + B.blockSize, 0)),
            ("halved block size", Self.patched32(Self.valid, start + B.blockSize, 32_768)),
            ("hash size", Self.patched32(Self.valid, start + B.hashSize, 32)),
            ("reserved", Self.patched32(Self.valid, start + B.reserved, 1)),
            ("file count huge", Self.patched32(Self.valid, start + B.fileCount, .max)),
            ("file count short", Self.patched32(Self.valid, start + B.fileCount, 1)),
            ("row entry out of range", Self.patched32(Self.valid, row0 + B.rowEntry, 1000)),
            ("row names a directory", Self.patched32(Self.valid, row0 + B.rowEntry, 0)),
            ("rows out of order", Self.patched32(Self.valid, row1 + B.rowEntry, big)),
            ("row reserved", Self.patched32(Self.valid, row0 + B.rowReserved, 7)),
            ("first block wrong", Self.patched64(Self.valid, row1 + B.rowFirstBlock, 4)),
            ("first block near UInt64.max", Self.patched64(Self.valid, row1 + B.rowFirstBlock, .max - 1)),
        ]
        for (label, bytes) in cases {
            #expect(throws: FileIndexError.self, "\(label)") { try FileIndex(bytes: bytes) }
        }
    }

    /// Random damage to the block table (a seeded in-process fuzz): every result either
    /// throws or loads an index whose block accessors all answer consistently.
    @Test func damagedBlockTablesNeverMisread() throws {
        let start = Self.blocksStart(Self.valid)
        var generator = SplitMix(seed: 13)
        for round in 0..<3_000 {
            var bytes = Self.valid
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                let at = Int.random(in: start..<bytes.count, using: &generator)
                bytes[at] = UInt8.random(in: 0...255, using: &generator)
            }
            if round % 7 == 0 { bytes.removeLast(Int.random(in: 0...40, using: &generator)) }
            guard let index = try? FileIndex(bytes: bytes) else { continue }
            for number in index.filesWithBlockHashes {
                let entry = try #require(index.entry(number))
                let hashes = try #require(index.blockHashes(of: number))
                let blockSize = UInt64(try #require(index.blockSize).value)
                #expect(entry.kind == .regularFile && entry.size > 0)
                #expect(UInt64(hashes.count) == (entry.size + blockSize - 1) / blockSize)
            }
        }
    }
}
