import TestSupport
import Testing
@testable import ODRFSCore

/// Truncated, corrupted and hand-crafted hostile indexes must throw (or, for harmless
/// corruption, still be fully readable), never crash.
@Suite struct FileIndexHostileTests {
    static let valid: [UInt8] = try! FileIndexWriter(packCount: 2).encode(root: FileIndexTests.sample())
    static let recordsStart = FileIndexLayout.headerSize

    static func patched(_ offset: Int, _ value: UInt32) -> [UInt8] {
        var bytes = valid
        withUnsafeBytes(of: value.littleEndian) { for (i, b) in $0.enumerated() { bytes[offset + i] = b } }
        return bytes
    }

    static func patched64(_ offset: Int, _ value: UInt64) -> [UInt8] {
        var bytes = valid
        withUnsafeBytes(of: value.littleEndian) { for (i, b) in $0.enumerated() { bytes[offset + i] = b } }
        return bytes
    }

    static func record(_ n: Int, _ field: Int) -> Int { recordsStart + n * FileIndexLayout.recordSize + field }

    @Test func everyTruncationThrows() {
        for length in 0..<Self.valid.count {
            #expect(throws: FileIndexError.self, "length \(length)") { try FileIndex(bytes: Array(Self.valid.prefix(length))) }
        }
    }

    @Test func headerProblems() {
        typealias H = FileIndexLayout.Header
        var magic = Self.valid
        magic[0] = UInt8(ascii: "X")
        #expect(throws: FileIndexError.self) { try FileIndex(bytes: magic) }
        #expect((try? FileIndex(bytes: magic)) == nil)
        #expect(throws: FileIndexError(.unsupportedVersion, "version 5 is not supported (this odrfs reads versions 1 to 4)")) {
            try FileIndex(bytes: Self.patched(H.version, 5))
        }
        #expect(throws: FileIndexError.self) { try FileIndex(bytes: Self.patched(H.version, 0)) }
        #expect(throws: FileIndexError.self) { try FileIndex(bytes: Self.patched(H.entryCount, 0)) }
        #expect(throws: FileIndexError.self) { try FileIndex(bytes: Self.patched(H.entryCount, UInt32.max)) }
        #expect(throws: FileIndexError.self) { try FileIndex(bytes: Self.patched64(H.stringsOffset, UInt64.max - 3)) }
        #expect(throws: FileIndexError.self) { try FileIndex(bytes: Self.patched64(H.recordsOffset, UInt64.max - 100)) }
        #expect(throws: FileIndexError.self) { try FileIndex(bytes: Self.patched64(H.stringsLength, UInt64.max)) }
        #expect(throws: FileIndexError.self) { try FileIndex(bytes: Self.patched(H.recordSize, 32)) }
    }

    @Test func recordProblems() {
        typealias F = FileIndexLayout.Record
        let cases: [(String, [UInt8])] = [
            ("unknown kind", Self.patched(Self.record(2, F.kind), 9)),
            ("parent out of range", Self.patched(Self.record(2, F.parent), 1000)),
            ("parent is not a directory", Self.patched(Self.record(4, F.parent), 2)),
            ("wrong parent", Self.patched(Self.record(4, F.parent), 0)),
            ("name past the blob", Self.patched64(Self.record(2, F.nameOffset), 1 << 40)),
            ("name length past the blob", Self.patched(Self.record(2, F.nameLength), UInt32.max)),
            ("children past the end", Self.patched(Self.record(1, F.count), 100)),
            ("children overflow", Self.patched64(Self.record(1, F.data), UInt64.max)),
            ("children before the directory", Self.patched64(Self.record(1, F.data), 0)),
            ("pack number too big", Self.patched(Self.record(3, F.pack), 2)),
            ("directory with a pack", Self.patched(Self.record(1, F.pack), 0)),
            ("symlink target past the blob", Self.patched(Self.record(5, F.count), 5000)),
            ("wrong subdirectory count", Self.patched(Self.record(0, F.subdirectoryCount), 3)),
            ("root not a directory", Self.patched(Self.record(0, F.kind), 1)),
            ("root with a parent", Self.patched(Self.record(0, F.parent), 1)),
            ("file offset overflow", Self.patched64(Self.record(3, F.data), UInt64.max)),
            ("empty name", Self.patched(Self.record(2, F.nameLength), 0)),
        ]
        for (label, bytes) in cases {
            #expect(throws: FileIndexError.self, "\(label)") { try FileIndex(bytes: bytes) }
        }
    }

    @Test func unsortedChildrenAreRejected() throws {
        // Swap the names of "Italy" and "a b.txt" in the string blob by pointing records at each other's names.
        typealias F = FileIndexLayout.Record
        var bytes = Self.valid
        for field in [F.nameOffset, F.nameLength] {
            let width = field == F.nameOffset ? 8 : 4
            let a = Self.record(1, field), b = Self.record(2, field)
            for i in 0..<width { bytes.swapAt(a + i, b + i) }
        }
        #expect(throws: FileIndexError.self) { try FileIndex(bytes: bytes) }
    }

    /// Random byte flips: whatever init accepts must be safe to walk completely.
    @Test func randomCorruptionNeverCrashes() {
        var rng = SplitMix(seed: 7)
        var accepted = 0
        for _ in 0..<3000 {
            var bytes = Self.valid
            for _ in 0..<Int(rng.next() % 4 + 1) {
                bytes[Int(rng.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: rng.next())
            }
            guard let index = try? FileIndex(bytes: bytes) else { continue }
            accepted += 1
            for raw in 0..<UInt32(index.entryCount) {
                let n = EntryNumber(raw)
                _ = index.entry(n)
                _ = index.symlinkTarget(of: n)
                _ = index.children(of: n).map { index.name(of: EntryNumber($0)) }
                #expect(index.lookup(path: index.path(of: n)) != nil)
            }
        }
        // Flips in mtimes, sizes and name bytes are harmless; some must have been accepted.
        #expect(accepted > 0)
    }
}
