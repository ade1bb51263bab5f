import Testing
@testable import ODRFSCore

/// The digest table (index version 2): every file's SHA-256, read back exactly; version-1
/// indexes without one still load; a hostile table is refused, never read out of bounds.
@Suite struct FileIndexDigestTests {
    typealias Node = FileIndexWriter.Node
    static let zeta = ContentHash.of(Array("zeta bytes".utf8))
    static let cafe = ContentHash.of(Array("café".utf8))

    /// The sample tree with digests on two of its three files ("a b.txt" has none).
    static func tree() -> Node {
        .directory("", children: [
            .file("zeta.txt", size: 10, pack: PackNumber(1), dataOffset: 512, sha256: zeta),
            .directory("Italy", children: [
                .file("Café Roma.txt", size: 3, pack: PackNumber(0), dataOffset: 2048, sha256: cafe),
                .symlink("latest", target: "Café Roma.txt"),
                .directory("empty"),
            ]),
            .file("a b.txt", size: 0, pack: PackNumber(0), dataOffset: 1536),
        ])
    }

    static let valid: [UInt8] = try! FileIndexWriter(packCount: 2).encode(root: tree())

    static func patched64(_ bytes: [UInt8], _ offset: Int, _ value: UInt64) -> [UInt8] {
        var bytes = bytes
        withUnsafeBytes(of: value.littleEndian) { for (i, b) in $0.enumerated() { bytes[offset + i] = b } }
        return bytes
    }

    static func digestsOffset(_ bytes: [UInt8]) -> Int {
        bytes.withUnsafeBytes { Int($0.baseAddress!.u64(FileIndexLayout.Header.digestsOffset)) }
    }

    @Test func digestsRoundTrip() throws {
        let index = try FileIndex(bytes: Self.valid)
        #expect(index.hasFileDigests)
        #expect(index.sha256(of: try #require(index.lookup(path: "zeta.txt"))) == Self.zeta)
        #expect(index.sha256(of: try #require(index.lookup(path: "Italy/Café Roma.txt"))) == Self.cafe)
        #expect(index.sha256(of: try #require(index.lookup(path: "a b.txt"))) == nil)
        #expect(index.sha256(of: try #require(index.lookup(path: "Italy/latest"))) == nil)
        #expect(index.sha256(of: .root) == nil)
        #expect(index.sha256(of: EntryNumber(UInt32(index.entryCount))) == nil)
        // The table is the last section: one 32-byte slot per entry.
        #expect(Self.digestsOffset(Self.valid) + index.entryCount * 32 == Self.valid.count)
    }

    @Test func contentHashBytesRoundTrip() throws {
        let bytes = Self.zeta.digestBytes
        #expect(bytes.count == 32)
        #expect(ContentHash(digestBytes: bytes) == Self.zeta)
        #expect(ContentHash(digestBytes: bytes.dropLast()) == nil)
    }

    /// An index written before the digest table existed: version 1, reserved field 0, no table.
    @Test func versionOneIndexStillLoads() throws {
        var old = Array(Self.valid.prefix(Self.digestsOffset(Self.valid)))
        old = Self.patched64(old, FileIndexLayout.Header.digestsOffset, 0)
        old[FileIndexLayout.Header.version] = 1
        let index = try FileIndex(bytes: old)
        #expect(!index.hasFileDigests)
        #expect(index.entryCount == 7)
        let zeta = try #require(index.lookup(path: "zeta.txt"))
        #expect(index.sha256(of: zeta) == nil)
        #expect(index.entry(zeta)?.dataOffset == 512)
    }

    @Test func hostileDigestTablesAreRefused() throws {
        typealias H = FileIndexLayout.Header
        let offset = Self.digestsOffset(Self.valid)
        let cases: [(String, [UInt8])] = [
            ("table inside the header", Self.patched64(Self.valid, H.digestsOffset, 8)),
            ("table past the end", Self.patched64(Self.valid, H.digestsOffset, UInt64(Self.valid.count))),
            ("table one byte short", Self.patched64(Self.valid, H.digestsOffset, UInt64(offset + 1))),
            ("offset near UInt64.max", Self.patched64(Self.valid, H.digestsOffset, UInt64.max - 3)),
            ("truncated table", Array(Self.valid.dropLast())),
        ]
        for (label, bytes) in cases {
            #expect(throws: FileIndexError.self, "\(label)") { try FileIndex(bytes: bytes) }
        }
        // A digest on the root directory (entry 0) or on the symlink (entry 5) is inconsistent.
        for entry in [0, 5] {
            var bytes = Self.valid
            bytes[offset + entry * 32 + 7] = 0xAB
            #expect(throws: FileIndexError.self, "digest on entry \(entry)") { try FileIndex(bytes: bytes) }
        }
        // A different digest on a file is just a different file: accepted, and read back.
        var flipped = Self.valid
        let zeta = Int(try #require(FileIndex(bytes: Self.valid).lookup(path: "zeta.txt")).rawValue)
        flipped[offset + zeta * 32] ^= 0xFF
        let index = try FileIndex(bytes: flipped)
        #expect(index.sha256(of: EntryNumber(UInt32(zeta))) != Self.zeta)
    }
}
