import Foundation
import Logging
import ODRFSBuild
import ODRFSCore
@testable import ODRFSMount
import ODRFSStore
import TestSupport
import Testing

/// What an update reads before a file may keep its inode (issue 26, item 8): the bytes of
/// both revisions' cached packs decide, never the indexes' digests; a file whose bytes
/// are not both local cannot be shown unchanged.
@Suite struct VerifiedFileBytesTests {
    /// Revision 2 of ``UpdatePlanTests/revision1`` with a/three.bin rewritten at the same size.
    static var revision2: [String: [UInt8]] {
        var files = UpdatePlanTests.revision1
        files["a/three.bin"] = SyntheticBundle.bytes(7_000, seed: 33)
        return files
    }

    /// Publishes every pack of the plain (uncompressed) dist dir built as `name` in `store`.
    static func publishPacks(of manifest: Manifest, dist: String, in store: PackStore) throws {
        for pack in manifest.packs {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: dist + "/" + pack.file))
            let file = try store.makeTemporaryFile(label: "test")
            #expect(bytes.withUnsafeBytes { pwrite(file.descriptor, $0.baseAddress, $0.count, 0) } == bytes.count)
            try store.publish(file, as: pack, at: Date())
        }
    }

    @Test func theBytesDecide() throws {
        let root = try TemporaryDirectory()
        let old = try UpdatePlanTests.build(UpdatePlanTests.revision1, in: root.path, name: "r1", compression: .none)
        let new = try UpdatePlanTests.build(Self.revision2, in: root.path, name: "r2", compression: .none)
        let entry = { (loaded: UpdatePlanTests.Loaded, path: String) throws -> IndexEntry in
            let number = try #require(loaded.index.lookup(path: path))
            return try #require(loaded.index.entry(number))
        }
        let store = try PackStore(root: root.path + "/cache", logger: Logger(label: "test"))
        try Self.publishPacks(of: old.manifest, dist: root.path + "/r1-dist", in: store)

        // Only revision 1's packs are local: nothing can be shown the same, nothing is read.
        let oldOnly = VerifiedFileBytes(store: store, mounted: old.manifest, available: new.manifest)
        #expect(!oldOnly.same(old: try entry(old, "a/one.bin"), new: try entry(new, "a/one.bin")))
        #expect(oldOnly.comparedBytes == 0 && oldOnly.mismatches == 0)

        try Self.publishPacks(of: new.manifest, dist: root.path + "/r2-dist", in: store)
        let both = VerifiedFileBytes(store: store, mounted: old.manifest, available: new.manifest)
        // Pack A changed (a/three.bin): a/one.bin's bytes are read from both packs, and equal.
        #expect(try entry(old, "a/one.bin").pack.map { old.manifest.pack($0).sha256 }
                != entry(new, "a/one.bin").pack.map { new.manifest.pack($0).sha256 })
        #expect(both.same(old: try entry(old, "a/one.bin"), new: try entry(new, "a/one.bin")))
        #expect(both.comparedBytes == 5_000)
        // Same size, different bytes: not the same, whatever an index says of them.
        #expect(!both.same(old: try entry(old, "a/three.bin"), new: try entry(new, "a/three.bin")))
        #expect(both.mismatches == 1)
        // Different sizes are never read.
        #expect(!both.same(old: try entry(old, "a/one.bin"), new: try entry(new, "a/three.bin")))
        #expect(both.mismatches == 1)
    }
}
