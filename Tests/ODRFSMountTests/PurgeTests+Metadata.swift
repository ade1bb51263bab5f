import Foundation
import ODRFSControl
import ODRFSCore
@testable import ODRFSMount
import ODRFSStore
import TestSupport
import Testing

/// Pinned metadata (file indexes, manifest) in the budget: it is never purged, but packs
/// get only what it leaves.
extension PurgeTests {
    /// Writes `bytes` of pretend file index named `hash` into the cache at `root`.
    func writeIndex(_ hash: ContentHash, bytes: Int, cache root: String) throws {
        let layout = CacheLayout(root: root)
        try FileManager.default.createDirectory(atPath: layout.indexDirectory, withIntermediateDirectories: true)
        try Data(count: bytes).write(to: URL(fileURLWithPath: layout.indexDirectory + "/" + hash.hex + "." + FileIndex.fileExtension))
    }

    @Test("the file index counts against the budget: three packs that fit alone do not fit beside it")
    func indexCountsAgainstBudget() async throws {
        let cache = try TemporaryDirectory()
        try writeIndex(bundle.manifest.index.sha256, bytes: 1_000, cache: cache.path)
        // Base and three 1,000-byte packs fill the budget exactly; the index does not fit too.
        let manager = try makeManager(cache: cache.path, limits: CacheLimits(budget: ByteCount(3_100)))
        #expect(manager.cacheStatus().metadataBytes == 1_000)
        try await manager.makeLocal(PackNumber.base)
        for n in 1...3 {
            try await read(n, with: manager)
        }
        // 4,100 bytes against 3,100: down to the 75 % watermark (2,325), oldest first.
        #expect(localLevels(manager) == [3])
        let status = manager.cacheStatus()
        #expect(status.cachedBytes == 100 + 1_000 + 1_000, "packs plus the pinned index")
        #expect(status.metadataBytes == 1_000)
        #expect(!status.isOverBudget)
        #expect(manager.snapshot().cache.metadataBytes == 1_000)
    }

    @Test("metadata larger than the budget: unretained packs go, retained ones stay, status says why, and purging again does nothing")
    func metadataOverBudget() async throws {
        let cache = try TemporaryDirectory()
        try writeIndex(bundle.manifest.index.sha256, bytes: 2_000, cache: cache.path)
        let manager = try makeManager(cache: cache.path, limits: CacheLimits(budget: ByteCount(1_500)))
        try await manager.retain(level(1))
        tick()
        try await manager.retain(level(2))
        manager.release(level(2))
        #expect(manager.purgeForPressure(reason: .manual) == 1_000)
        #expect(manager.state(of: level(1)) == .inUse)
        #expect(manager.state(of: level(2)) == .notDownloaded)
        // Nothing left to free: a bounded no-op, not a loop.
        #expect(manager.purgeForPressure(reason: .periodicCheck) == 0)
        let status = manager.cacheStatus()
        #expect(status.isOverBudget)
        #expect(status.cachedBytes == 3_000)
        let text = manager.snapshot().renderTable()
        #expect(text.contains("2000 pinned in file indexes and manifest"), "\(text)")
        #expect(text.contains("OVER BUDGET (file indexes and manifest alone exceed it"), "\(text)")
        manager.release(level(1))
        manager.purgeForPressure(reason: .afterRelease)
        #expect(manager.state(of: level(1)) == .notDownloaded)
        #expect(manager.cacheStatus().cachedBytes == 2_000)
    }

    @Test("after an update, the indexes of revisions other than the current and the replaced one are deleted and stop counting")
    func droppedRevisionReleasesItsIndex() async throws {
        let cache = try TemporaryDirectory()
        let older = ContentHash(hex: String(repeating: "1", count: 64))!
        let previous = ContentHash(hex: String(repeating: "2", count: 64))!
        try writeIndex(older, bytes: 700, cache: cache.path)
        try writeIndex(previous, bytes: 500, cache: cache.path)
        try writeIndex(bundle.manifest.index.sha256, bytes: 300, cache: cache.path)
        let manager = try makeManager(cache: cache.path, limits: CacheLimits(budget: ByteCount(10_000)))
        #expect(manager.cacheStatus().metadataBytes == 1_500)
        manager.releaseDroppedIndexes(keepingPrevious: IndexReference(file: "index/\(previous.hex).odrx", bytes: ByteCount(500), sha256: previous, entries: 1))
        #expect(manager.cacheStatus().metadataBytes == 800)
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: cache.path + "/index"))
        #expect(left == [previous.hex + ".odrx", bundle.manifest.index.sha256.hex + ".odrx"])
    }
}
