import Testing
import TestSupport
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

    /// The flat table (issue 28) against the linear scans, on random tag sets: tags named
    /// twice by one pack, tags only packs name, declared tags without packs.
    @Test func randomManifestsAnswerAsTheScansDo() {
        var rng = SplitMix(seed: 20261127)
        let names = (0..<30).map { ODRFSCore.Tag("T\($0)") }
        for _ in 0..<50 {
            let packs = (0..<Int.random(in: 1...120, using: &rng)).map { n in
                let tags = (0..<Int.random(in: 0...4, using: &rng)).map { _ in names.randomElement(using: &rng)! }
                return PackDescriptor(id: PackID("p\(n)"), tags: tags, file: "packs/\(n).tar", bytes: ByteCount(1),
                                      sha256: ContentHash.of([UInt8(n & 0xFF)]), chunks: [], files: 1)
            }
            let declared = names.filter { _ in Bool.random(using: &rng) }
            let manifest = Manifest(bundleVersion: ContentHash.of([]), chunkSize: ByteCount(1024),
                                    index: IndexReference(file: "index/i.odrx", bytes: ByteCount(1), sha256: ContentHash.of([9]), entries: 1),
                                    packs: packs, tags: declared.map { TagDescriptor(tag: $0, packs: []) }, initialInstall: [], prefetch: [])
            let index = TagPackIndex(manifest)
            for tag in names + [ODRFSCore.Tag("absent")] {
                #expect(index.packs(for: tag) == manifest.packs(for: tag), "tag \(tag)")
                #expect(index.declares(tag) == declared.contains(tag))
            }
            let asked = (0..<5).map { _ in names.randomElement(using: &rng)! }
            var seen: Set<PackNumber> = []
            let expected = asked.flatMap { manifest.packs(for: $0) }.filter { seen.insert($0).inserted }
            #expect(index.packs(for: asked) == expected)
        }
    }

    @Test func severalTagsNameEachPackOnceInFirstNamedOrder() {
        let index = TagPackIndex(Self.manifest())
        // B names packs 2 (A+B) and 3 (B); A then adds 1 only.
        #expect(index.packs(for: [ODRFSCore.Tag("B"), ODRFSCore.Tag("A"), ODRFSCore.Tag("B")]).map(\.rawValue) == [2, 3, 1])
    }
}
