import Foundation
import Logging
import ODRFSCore
import ODRFSStore
import TestSupport
import Testing

/// A cached file index is trusted only when its SHA-256 matches the manifest (issue 12, defect 5).
@Suite("Cached file index")
struct CachedIndexTests {
    static let bytes = [UInt8](repeating: 42, count: 3000)

    static func reference(for bytes: [UInt8]) -> IndexReference {
        IndexReference(file: "index/x.odrx", bytes: ByteCount(Int64(bytes.count)), sha256: ContentHash.of(bytes), entries: 1)
    }

    @Test("a cached index of the right size but other bytes is not trusted, and is removed")
    func damagedIndexIsNotTrusted() throws {
        let cache = try TemporaryDirectory()
        let store = try PackStore(root: cache.path, logger: Logger(label: "test"))
        let reference = Self.reference(for: Self.bytes)
        var damaged = Self.bytes
        damaged[1500] ^= 1
        try Data(damaged).write(to: URL(fileURLWithPath: store.path(of: reference)))
        #expect(!store.contains(reference))
        #expect(!FileManager.default.fileExists(atPath: store.path(of: reference)))

        try Data(Self.bytes).write(to: URL(fileURLWithPath: store.path(of: reference)))
        #expect(store.contains(reference))
    }

    @Test("an index reference beyond the size limit is never in the cache")
    func oversizedReferenceIsNotTrusted() throws {
        let cache = try TemporaryDirectory()
        let store = try PackStore(root: cache.path, logger: Logger(label: "test"))
        var reference = Self.reference(for: Self.bytes)
        reference.bytes = BundleLimits.maxIndexBytes + ByteCount(1)
        #expect(!store.contains(reference))
    }
}
