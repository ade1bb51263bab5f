import Testing
@testable import ODRFSCore

/// The file index checked against its manifest (issue 12, defect 3): a file's pack must exist
/// and its bytes must lie inside that pack, so `Manifest.pack(_:)` and offset arithmetic
/// downstream never trap.
@Suite struct FileIndexManifestTests {
    typealias F = FileIndexLayout.Record

    /// A manifest matching `FileIndexTests.sample()`: two packs, 7 entries.
    static func manifest(packCount: Int = 2, packBytes: Int64 = 4096, entries: Int = 7) -> Manifest {
        let tags = (1..<packCount).map { Tag("T\($0)") }
        let packs = (0..<packCount).map { n in
            let bytes = n == 0 ? packBytes : 1024
            return PackDescriptor(id: n == 0 ? .base : PackID(tags: [tags[n - 1]]), tags: n == 0 ? [] : [tags[n - 1]],
                                  file: "packs/\(n).tar", bytes: ByteCount(bytes), sha256: ContentHash.of([UInt8(n)]),
                                  chunks: (0..<Int((bytes + 1023) / 1024)).map { ContentHash.of([UInt8(n), UInt8($0)]) }, files: 1)
        }
        return Manifest(bundleVersion: ContentHash.of([]), chunkSize: ByteCount(1024),
                        index: IndexReference(file: "index/i.odrx", bytes: ByteCount(100), sha256: ContentHash.of([9]), entries: entries),
                        packs: packs, tags: tags.enumerated().map { TagDescriptor(tag: $1, packs: [packs[$0 + 1].id]) },
                        initialInstall: [], prefetch: [])
    }

    @Test func matchingManifestIsAccepted() throws {
        let index = try FileIndex(bytes: FileIndexHostileTests.valid)
        try index.validate(against: Self.manifest())
    }

    @Test func packCountMismatchIsRejected() throws {
        // Index for 2 packs, manifest with 1: file "zeta.txt" is in pack 1, which
        // Manifest.pack(_:) would trap on.
        let index = try FileIndex(bytes: FileIndexHostileTests.valid)
        #expect(throws: FileIndexError.self) { try index.validate(against: Self.manifest(packCount: 1)) }
        #expect(throws: FileIndexError.self) { try index.validate(against: Self.manifest(packCount: 3)) }
        #expect(throws: FileIndexError.self) { try index.validate(against: Self.manifest(entries: 8)) }
    }

    @Test func fileBeyondItsPackIsRejected() throws {
        // "Italy/Café Roma.txt" is 3 bytes at 2048 of the base pack.
        let index = try FileIndex(bytes: FileIndexHostileTests.valid)
        try index.validate(against: Self.manifest(packBytes: 2051))
        let error = #expect(throws: FileIndexError.self) { try index.validate(against: Self.manifest(packBytes: 2050)) }
        #expect(error?.message.contains("Italy/Café Roma.txt") == true, "\(error?.message ?? "")")
    }

    @Test func offsetsBeyondInt64AreRejected() {
        // Used to pass validation and trap in `Int64(entry.dataOffset)` in the mount.
        let cases: [[UInt8]] = [
            FileIndexHostileTests.patched64(FileIndexHostileTests.record(3, F.data), 1 << 63),
            FileIndexHostileTests.patched64(FileIndexHostileTests.record(3, F.data), UInt64(Int64.max)),   // + size 10
            FileIndexHostileTests.patched64(FileIndexHostileTests.record(3, F.size), UInt64(Int64.max) - 100),
        ]
        for bytes in cases {
            #expect(throws: FileIndexError.self) { try FileIndex(bytes: bytes) }
        }
        let fits = FileIndexHostileTests.patched64(FileIndexHostileTests.record(3, F.data), UInt64(Int64.max) - 10)
        #expect((try? FileIndex(bytes: fits))?.entry(EntryNumber(3))?.packEnd == .max)
    }
}
