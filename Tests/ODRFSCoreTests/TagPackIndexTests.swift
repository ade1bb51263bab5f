import Testing
@testable import ODRFSCore

/// `TagPackIndex` answers exactly what the manifest's linear scans answer.
@Suite struct TagPackIndexTests {
    /// Packs with overlapping tag sets: A, B, A+B, C (and base); tag D is declared but has no pack.
    static func manifest() -> Manifest {
        let sets: [[ODRFSCore.Tag]] = [[], [ODRFSCore.Tag("A")], [ODRFSCore.Tag("A"), ODRFSCore.Tag("B")], [ODRFSCore.Tag("B")], [ODRFSCore.Tag("C")]]
        let packs = sets.enumerated().map { n, tags in
            PackDescriptor(id: tags.isEmpty ? .base : PackID(tags: tags), tags: tags, file: "packs/\(n).tar",
                           bytes: ByteCount(1024), sha256: ContentHash.of([UInt8(n)]), chunks: [ContentHash.of([UInt8(n), 0])], files: 1)
        }
        let tags = ["A", "B", "C", "D"].map { name in
            TagDescriptor(tag: ODRFSCore.Tag(name), packs: packs.filter { $0.tags.contains(ODRFSCore.Tag(name)) }.map(\.id))
        }
        return Manifest(bundleVersion: ContentHash.of([]), chunkSize: ByteCount(1024),
                        index: IndexReference(file: "index/i.odrx", bytes: ByteCount(100), sha256: ContentHash.of([9]), entries: 5),
                        packs: packs, tags: tags, initialInstall: [], prefetch: [])
    }

    @Test func answersAsTheManifestDoes() {
        let manifest = Self.manifest()
        let index = TagPackIndex(manifest)
        for name in ["A", "B", "C", "D", "E"] {
            #expect(index.packs(for: ODRFSCore.Tag(name)) == manifest.packs(for: ODRFSCore.Tag(name)), "tag \(name)")
        }
        for pack in manifest.packs {
            #expect(index.packNumber(of: pack.id) == manifest.packNumber(of: pack.id))
        }
        #expect(index.packNumber(of: PackID(tags: [ODRFSCore.Tag("Z")])) == nil)
        #expect(index.declares(ODRFSCore.Tag("D")) && !index.declares(ODRFSCore.Tag("E")))
    }

    @Test func severalTagsNameEachPackOnceInFirstNamedOrder() {
        let index = TagPackIndex(Self.manifest())
        // B names packs 2 (A+B) and 3 (B); A then adds 1 only.
        #expect(index.packs(for: [ODRFSCore.Tag("B"), ODRFSCore.Tag("A"), ODRFSCore.Tag("B")]).map(\.rawValue) == [2, 3, 1])
    }
}
