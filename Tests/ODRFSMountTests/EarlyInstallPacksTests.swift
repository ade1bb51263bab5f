@testable import ODRFSCore
@testable import ODRFSMount
import Testing
import TestSupport

/// The initial-install packs found in one pass are the ones ``TagPackIndex`` gives.
@Suite struct EarlyInstallPacksTests {
    @Test func sameAsTheTagPackIndex() {
        var rng = SplitMix(seed: 20261127)
        let names = (0..<20).map { ODRFSCore.Tag("T\($0)") }
        for _ in 0..<50 {
            let packs = (0..<Int.random(in: 1...80, using: &rng)).map { n in
                let tags = (0..<Int.random(in: 0...3, using: &rng)).map { _ in names.randomElement(using: &rng)! }
                return PackDescriptor(id: PackID("p\(n)"), tags: tags, file: "packs/\(n).tar", bytes: ByteCount(1),
                                      sha256: ContentHash.of([UInt8(n & 0xFF)]), chunks: [], files: 1)
            }
            // Repeated tags and tags no pack holds, in any order.
            let initial = (0..<Int.random(in: 0...6, using: &rng)).map { _ in names.randomElement(using: &rng)! } + [ODRFSCore.Tag("none")]
            let manifest = Manifest(bundleVersion: ContentHash.of([]), chunkSize: ByteCount(1024),
                                    index: IndexReference(file: "index/i.odrx", bytes: ByteCount(1), sha256: ContentHash.of([9]), entries: 1),
                                    packs: packs, tags: names.map { TagDescriptor(tag: $0, packs: []) }, initialInstall: initial, prefetch: [])
            #expect(EarlyInstall.initialInstallPacks(of: manifest) == TagPackIndex(manifest).packs(for: initial), "initial \(initial)")
        }
    }
}
