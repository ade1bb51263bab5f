import Foundation
import Logging
import ODRFSCore
import ODRFSFetch
@testable import ODRFSMount
import ODRFSStore
import TestSupport
import Testing

/// A cache whose index was lost (a power cut before it was durable, a deleted or damaged
/// index.sqlite) holds pack files nobody vouches for. The mount does not wait to hash them:
/// they are served once verified, by the background pass or by their first open, and a
/// wrong one is never served.
@Suite("Unverified packs after a lost index")
struct UnverifiedPackTests {
    let bundle = SyntheticBundle(packContents: [
        (.base, SyntheticBundle.bytes(100, seed: 1)),
        (PackID("Level1"), SyntheticBundle.bytes(10_000, seed: 2)),
        (PackID("Level2"), SyntheticBundle.bytes(5_000, seed: 3)),
    ])
    let level1 = PackNumber(1)
    let level2 = PackNumber(2)
    let logger = Logger(label: "test")

    /// A cache directory holding the packs' files (`damaged`: one byte changed) and no index.
    func cacheWithoutIndex(damaged: Set<PackNumber> = []) throws -> TemporaryDirectory {
        let cache = try TemporaryDirectory()
        let store = try PackStore(root: cache.path, logger: logger)
        for number in [level1, level2] {
            let pack = bundle.manifest.pack(number)
            var bytes = bundle.files[pack.file]!
            if damaged.contains(number) { bytes[100] ^= 1 }
            try Data(bytes).write(to: URL(fileURLWithPath: store.path(of: pack)))
        }
        store.releaseLock()
        return cache
    }

    func makeManager(cache: String, origin: FakeOrigin) throws -> ResourceManager {
        let store = try PackStore(root: cache, logger: logger)
        let downloader = PackDownloader(origin: origin, store: store, chunkSize: bundle.manifest.chunkSize, logger: logger)
        return try ResourceManager(manifest: bundle.manifest, store: store, downloader: downloader, logger: logger, deferringHashes: true)
    }

    @Test("the manager starts without hashing them; the background pass makes them local with no download")
    func backgroundPass() async throws {
        let cache = try cacheWithoutIndex()
        let origin = FakeOrigin(files: bundle.files)
        let manager = try makeManager(cache: cache.path, origin: origin)
        #expect(manager.state(of: level1) == .notDownloaded)
        #expect(manager.state(of: level2) == .notDownloaded)
        #expect(await manager.verifyUnverifiedPacks() == 2)
        #expect(manager.state(of: level1) == .downloaded)
        #expect(manager.state(of: level2) == .downloaded)
        #expect(origin.startedDownloads == 0)
        #expect(manager.cacheStatus().cachedBytes == bundle.manifest.pack(level1).bytes.value + bundle.manifest.pack(level2).bytes.value)
        let reader = try await manager.openReader(level1, prefix: 0)
        reader.close()
        #expect(try manager.store.index.pack(sha256: bundle.manifest.pack(level1).sha256.hex) != nil, "not recorded")
        await manager.shutdown()
    }

    @Test("a retired manager's pass stops: the copies wait for the serving revision")
    func passStopsWhenRetired() async throws {
        let cache = try cacheWithoutIndex()
        let origin = FakeOrigin(files: bundle.files)
        let manager = try makeManager(cache: cache.path, origin: origin)
        #expect(await manager.verifyUnverifiedPacks(while: { false }) == 0)
        #expect(manager.state(of: level1) == .notDownloaded)
        #expect(FileManager.default.fileExists(atPath: manager.store.layout.unverifiedPath(of: bundle.manifest.pack(level1))))
        await manager.shutdown()
    }

    @Test("an open before the pass hashes the local copy instead of downloading it")
    func openAdoptsTheCopy() async throws {
        let cache = try cacheWithoutIndex()
        let origin = FakeOrigin(files: bundle.files)
        let manager = try makeManager(cache: cache.path, origin: origin)
        try await manager.retain(level1)
        #expect(manager.state(of: level1) == .inUse)
        #expect(origin.startedDownloads == 0)
        #expect(manager.status()[1].fetchCount == 0, "a local copy counted as a fetch")
        manager.release(level1)
        // The pass finds it local already and leaves it be.
        #expect(await manager.verifyUnverifiedPacks() == 1)
        #expect(origin.startedDownloads == 0)
        await manager.shutdown()
    }

    @Test("a damaged copy is deleted, never served: the pass skips it and an open downloads the pack")
    func damagedCopy() async throws {
        let cache = try cacheWithoutIndex(damaged: [level1])
        let origin = FakeOrigin(files: bundle.files)
        let manager = try makeManager(cache: cache.path, origin: origin)
        #expect(await manager.verifyUnverifiedPacks() == 1)
        #expect(manager.state(of: level1) == .notDownloaded)
        #expect(!FileManager.default.fileExists(atPath: manager.store.layout.unverifiedPath(of: bundle.manifest.pack(level1))))
        try await manager.retain(level1)
        #expect(origin.downloads(of: bundle.manifest.pack(level1).file) == 1)
        #expect(try Data(contentsOf: URL(fileURLWithPath: manager.path(of: level1))) == Data(bundle.files[bundle.manifest.pack(level1).file]!))
        manager.release(level1)
        await manager.shutdown()
    }
}
