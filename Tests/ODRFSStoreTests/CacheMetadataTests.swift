import Foundation
import Logging
import ODRFSCore
import ODRFSStore
import TestSupport
import Testing

/// The pinned metadata of a cache directory: what `measureMetadata()` counts and what
/// `removeIndexes(keeping:)` deletes.
@Suite("Cache metadata")
struct CacheMetadataTests {
    static func hash(_ digit: Character) -> ContentHash {
        ContentHash(hex: String(repeating: digit, count: 64))!
    }

    static func writeIndex(_ hash: ContentHash, bytes: Int, in store: PackStore) throws {
        try Data(count: bytes).write(to: URL(fileURLWithPath: store.layout.indexDirectory + "/" + hash.hex + "." + FileIndex.fileExtension))
    }

    @Test("the manifest, its signature and every index file count; symlinks, directories and packs do not")
    func measures() throws {
        let cache = try TemporaryDirectory()
        let store = try PackStore(root: cache.path, logger: Logger(label: "test"))
        #expect(store.measureMetadata() == CacheMetadata())
        try store.saveManifest(Data(count: 300), signature: Data(count: 20))
        try Self.writeIndex(Self.hash("a"), bytes: 1_000, in: store)
        try Self.writeIndex(Self.hash("b"), bytes: 4_000, in: store)
        // Neither a symlink (to a big file) nor a directory is a cached index.
        try Data(count: 50_000).write(to: URL(fileURLWithPath: cache.path + "/elsewhere"))
        #expect(symlink(cache.path + "/elsewhere", store.layout.indexDirectory + "/link.odrx") == 0)
        try FileManager.default.createDirectory(atPath: store.layout.indexDirectory + "/dir.odrx", withIntermediateDirectories: false)
        try Data(count: 7_000).write(to: URL(fileURLWithPath: store.layout.packsDirectory + "/" + Self.hash("c").hex + ".tar"))
        let metadata = store.measureMetadata()
        #expect(metadata.manifestBytes == 320)
        #expect(metadata.indexBytes == 5_000)
        #expect(metadata.indexFiles == 2)
        #expect(metadata.totalBytes == 5_320)
    }

    @Test("removing the indexes of dropped revisions keeps the named ones and files the store did not write")
    func removesDroppedIndexes() throws {
        let cache = try TemporaryDirectory()
        let store = try PackStore(root: cache.path, logger: Logger(label: "test"))
        for (digit, bytes) in [("1", 100), ("2", 200), ("3", 300), ("4", 400)] as [(Character, Int)] {
            try Self.writeIndex(Self.hash(digit), bytes: bytes, in: store)
        }
        try Data(count: 10).write(to: URL(fileURLWithPath: store.layout.indexDirectory + "/notes.txt"))
        let removed = store.removeIndexes(keeping: [Self.hash("3"), Self.hash("4")])
        #expect(removed.files == 2)
        #expect(removed.bytes == 300)
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: store.layout.indexDirectory))
        #expect(left == [Self.hash("3").hex + ".odrx", Self.hash("4").hex + ".odrx", "notes.txt"])
        #expect(store.measureMetadata().indexBytes == 700 + 10, "notes.txt is on disk, so it still counts")
        #expect(store.removeIndexes(keeping: [Self.hash("3"), Self.hash("4")]).files == 0)
    }

    @Test("an index written since the update began stays: a check beside the update fetched it")
    func sparesIndexesOfConcurrentChecks() throws {
        let cache = try TemporaryDirectory()
        let store = try PackStore(root: cache.path, logger: Logger(label: "test"))
        try Self.writeIndex(Self.hash("1"), bytes: 100, in: store)
        try Self.writeIndex(Self.hash("2"), bytes: 200, in: store)
        // Index 1 was written an hour before the update began, index 2 after it.
        let began = Date()
        let old = timespec(tv_sec: Int(began.timeIntervalSince1970) - 3_600, tv_nsec: 0)
        let times = [old, old]
        #expect(utimensat(AT_FDCWD, store.layout.indexDirectory + "/" + Self.hash("1").hex + ".odrx", times, 0) == 0)
        let recent = timespec(tv_sec: Int(began.timeIntervalSince1970) + 1, tv_nsec: 0)
        #expect(utimensat(AT_FDCWD, store.layout.indexDirectory + "/" + Self.hash("2").hex + ".odrx", [recent, recent], 0) == 0)
        let removed = store.removeIndexes(keeping: [Self.hash("3")], sparingModifiedSince: began)
        #expect(removed.files == 1)
        #expect(removed.bytes == 100)
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: store.layout.indexDirectory))
        #expect(left == [Self.hash("2").hex + ".odrx"])
    }

    @Test("the total saturates instead of trapping")
    func saturates() {
        #expect(CacheMetadata(manifestBytes: .max, indexBytes: 1).totalBytes == .max)
    }
}
