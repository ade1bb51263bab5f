import Foundation
import Logging
import ODRFSCore
import ODRFSFetch
@testable import ODRFSMount
import ODRFSStore
import Synchronization
import TestSupport
import Testing

/// The purger and cache accounting, with a fake origin, an injected clock and an
/// injected free-space probe.
@Suite("Purger")
struct PurgeTests {
    /// Base plus six 1,000-byte level packs.
    let bundle = SyntheticBundle(packContents: [(.base, SyntheticBundle.bytes(100, seed: 0))]
        + (1...6).map { (PackID("Level\($0)"), SyntheticBundle.bytes(1_000, seed: UInt8($0))) })
    let now = LockedValue(Date(timeIntervalSince1970: 1_000))
    /// The size of a pretend disk holding the cache; nil means plenty of room.
    let diskSize = LockedValue<Int64?>(nil)

    func makeManager(cache: String, limits: CacheLimits, origin: FakeOrigin? = nil) throws -> ResourceManager {
        let logger = Logger(label: "test")
        let store = try PackStore(root: cache, logger: logger)
        let origin = origin ?? FakeOrigin(files: bundle.files)
        let downloader = PackDownloader(origin: origin, store: store, chunkSize: bundle.manifest.chunkSize, logger: logger)
        let now = self.now
        let diskSize = self.diskSize
        let packs = cache + "/packs"
        return try ResourceManager(
            manifest: bundle.manifest, store: store, downloader: downloader, limits: limits, logger: logger,
            clock: { now.withLock { $0 } },
            availableBytes: {
                guard let size = diskSize.value else { return 1 << 40 }
                let names = (try? FileManager.default.contentsOfDirectory(atPath: packs)) ?? []
                let used = names.reduce(Int64(0)) { sum, name in
                    sum + ((try? FileManager.default.attributesOfItem(atPath: packs + "/" + name)[.size] as? Int64) ?? 0)
                }
                return size - used
            }
        )
    }

    func tick() { now.withLock { $0 += 10 } }
    func level(_ n: Int) -> PackNumber { PackNumber(UInt32(n)) }
    /// One read of Level`n` a tick after the last: retained (fetched if need be) and
    /// released; then, with `purging`, the purge a fetch under pressure would run.
    func read(_ n: Int, with manager: ResourceManager, purging: Bool = true) async throws {
        tick()
        try await manager.retain(level(n))
        manager.release(level(n))
        if purging { manager.purgeForPressure(reason: .manual) }
    }
    func localLevels(_ manager: ResourceManager) -> [Int] {
        (1...6).filter { manager.state(of: level($0)) != .notDownloaded }
    }

    @Test("reading six packs in turn with a three-pack budget stays under budget and evicts least recently used first")
    func budgetAndLRU() async throws {
        let cache = try TemporaryDirectory()
        // Budget of three packs (plus base); purges go down to 75 %.
        let manager = try makeManager(cache: cache.path, limits: CacheLimits(budget: ByteCount(3_100)))
        try await manager.makeLocal(PackNumber.base)
        for n in 1...6 {
            try await read(n, with: manager)
            #expect(manager.cacheStatus().cachedBytes <= 3_100, "over budget after reading Level\(n)")
        }
        // The most recently read packs survive; the oldest went first.
        let local = localLevels(manager)
        #expect(local.last == 6)
        #expect(local == Array((7 - local.count)...6), "evictions were not in LRU order: \(local)")
        #expect(manager.state(of: .base) == .downloaded, "base is never purged")
        let files = try FileManager.default.contentsOfDirectory(atPath: cache.path + "/packs")
        #expect(files.count == local.count + 1, "files on disk match the accounting")
    }

    @Test("preservation priority beats recency; overrides persist across restarts")
    func priorities() async throws {
        let cache = try TemporaryDirectory()
        let limits = CacheLimits(budget: ByteCount(3_100))
        do {
            let manager = try makeManager(cache: cache.path, limits: limits)
            manager.setPreservationPriority(0.9, for: Tag("Level1"))
            for n in 1...4 {
                try await read(n, with: manager, purging: false)
            }
            // Fetching Level4 needed room: Level1 is the oldest but has the highest
            // priority, so Level2 and Level3 (priority 0) went instead.
            #expect(localLevels(manager) == [1, 4])
            await manager.shutdown()
        }
        let restarted = try makeManager(cache: cache.path, limits: limits)
        #expect(restarted.preservationPriority(of: Tag("Level1")) == 0.9)
        #expect(restarted.status()[1].preservationPriority == 0.9)
        #expect(localLevels(restarted) == [1, 4])
        #expect(restarted.status()[1].lastAccess == Date(timeIntervalSince1970: 1_010), "last access survived the restart")
        #expect(restarted.status()[4].lastAccess == Date(timeIntervalSince1970: 1_040))
    }

    @Test("a retained pack survives any pressure and is purged once released")
    func retainedSurvives() async throws {
        let cache = try TemporaryDirectory()
        let manager = try makeManager(cache: cache.path, limits: CacheLimits(budget: ByteCount(1_500)))
        try await manager.retain(level(1))
        let fd = open(manager.path(of: level(1)), O_RDONLY)
        defer { close(fd) }
        for n in 2...4 {
            try await read(n, with: manager)
        }
        #expect(manager.state(of: level(1)) == .inUse)
        manager.purgeNow(matching: { _ in true })
        #expect(manager.state(of: level(1)) == .inUse)
        var buffer = [UInt8](repeating: 0, count: 1_000)
        #expect(pread(fd, &buffer, 1_000, 0) == 1_000)
        #expect(buffer == bundle.files[bundle.manifest.packs[1].file]!)
        manager.release(level(1))
        let report = manager.purgeNow(matching: { _ in true })
        #expect(report.evicted.map(\.id) == ["Level1"])
        #expect(manager.state(of: level(1)) == .notDownloaded)
    }

    @Test("retained packs may push the cache over budget; that is reported")
    func overBudgetReported() async throws {
        let cache = try TemporaryDirectory()
        let manager = try makeManager(cache: cache.path, limits: CacheLimits(budget: ByteCount(1_500)))
        try await manager.retain(level(1))
        try await manager.retain(level(2))
        manager.purgeForPressure(reason: .manual)
        let status = manager.cacheStatus()
        #expect(status.isOverBudget)
        #expect(status.inUseBytes == 2_000)
        let text = manager.snapshot().renderTable()
        #expect(text.contains("OVER BUDGET"))
    }

    @Test("disk full: the fetch fails with noSpace, leaves no partial file and loses nothing else")
    func diskFull() async throws {
        let cache = try TemporaryDirectory()
        let manager = try makeManager(cache: cache.path, limits: CacheLimits())
        try await manager.retain(level(1))
        diskSize.value = 1_500
        do {
            try await manager.retain(level(2))
            Issue.record("a pack was fetched into a full disk")
        } catch {
            #expect(error.kind == .noSpace)
            #expect(error.message.contains("Level2"))
        }
        #expect(manager.state(of: level(2)) == .notDownloaded)
        #expect(manager.state(of: level(1)) == .inUse, "a retained pack is never purged to make room")
        #expect(manager.cacheStatus().reservedBytes == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache.path + "/tmp").isEmpty)
        diskSize.value = nil
        try await manager.retain(level(2))
        #expect(manager.state(of: level(2)) == .inUse)
    }

    @Test("disk nearly full: unretained packs are purged to make room")
    func purgeToMakeRoom() async throws {
        let cache = try TemporaryDirectory()
        let manager = try makeManager(cache: cache.path, limits: CacheLimits())
        try await manager.makeLocal(level(1))
        diskSize.value = 1_500
        try await manager.retain(level(2))
        #expect(manager.state(of: level(1)) == .notDownloaded)
        #expect(manager.state(of: level(2)) == .inUse)
    }

    @Test("concurrent downloads reserve their bytes against the budget")
    func reservations() async throws {
        let cache = try TemporaryDirectory()
        let origin = FakeOrigin(files: bundle.files, gate: Gate())
        let manager = try makeManager(cache: cache.path, limits: CacheLimits(budget: ByteCount(10_000)), origin: origin)
        let downloads = (1...3).map { n in Task { try await manager.retain(level(n)) } }
        try await waitUntil { origin.startedDownloads == 3 }
        #expect(manager.cacheStatus().reservedBytes == 3_000)
        let text = manager.snapshot().renderTable()
        #expect(text.contains("3000 reserved"))
        origin.gate.open()
        for download in downloads { try await download.value }
        #expect(manager.cacheStatus().reservedBytes == 0)
        #expect(manager.cacheStatus().cachedBytes == 3_000)
    }

    @Test("stress: concurrent opens, closes and purges end with zero retains and consistent accounting")
    func stress() async throws {
        let cache = try TemporaryDirectory()
        let manager = try makeManager(cache: cache.path, limits: CacheLimits(budget: ByteCount(2_500)))
        let deadline = ContinuousClock.now + .seconds(3)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    var n = worker
                    while ContinuousClock.now < deadline {
                        let pack = level(n % 6 + 1)
                        try await manager.retain(pack)
                        // While retained the file must exist and hold the right bytes.
                        let bytes = FileManager.default.contents(atPath: manager.path(of: pack))
                        #expect(bytes == Data(bundle.files[bundle.manifest.packs[Int(pack.rawValue)].file]!))
                        manager.release(pack)
                        n += 1
                    }
                }
            }
            group.addTask {
                while ContinuousClock.now < deadline {
                    manager.purgeForPressure(reason: .manual)
                    _ = manager.purgeNow(matching: { $0.rawValue % 2 == 0 })
                    try await Task.sleep(for: .milliseconds(1))
                }
            }
            try await group.waitForAll()
        }
        let status = manager.status()
        #expect(status.allSatisfy { $0.retainCount == 0 })
        #expect(manager.cacheStatus().inUseBytes == 0)
        let local = status.filter { $0.state == .downloaded }
        #expect(manager.cacheStatus().cachedBytes == local.reduce(0) { $0 + $1.bytes.value })
        let files = Set(try FileManager.default.contentsOfDirectory(atPath: cache.path + "/packs"))
        #expect(files == Set(local.map { bundle.manifest.packs[Int($0.number.rawValue)].sha256.hex + ".tar" }))
    }
}

extension PackNumber {
    static let base = PackNumber(0)
}

@Suite("Tag requests")
struct TagRequestTests {
    let bundle = SyntheticBundle(packContents: [
        (.base, SyntheticBundle.bytes(100, seed: 0)),
        (PackID("Level1"), SyntheticBundle.bytes(1_000, seed: 1)),
        (PackID("Level1+Level2"), SyntheticBundle.bytes(500, seed: 2)),
        (PackID("Level2"), SyntheticBundle.bytes(1_000, seed: 3)),
    ])

    func makeManager(cache: String, maximumInUse: Int64 = 1 << 30) throws -> (ResourceManager, FakeOrigin) {
        let logger = Logger(label: "test")
        let store = try PackStore(root: cache, logger: logger)
        let origin = FakeOrigin(files: bundle.files)
        let downloader = PackDownloader(origin: origin, store: store, chunkSize: bundle.manifest.chunkSize, logger: logger)
        let manager = try ResourceManager(manifest: bundle.manifest, store: store, downloader: downloader,
                                          limits: CacheLimits(maximumInUse: ByteCount(maximumInUse)), logger: logger)
        return (manager, origin)
    }

    @Test("a request fetches and retains every pack of its tags, the shared one included; ending releases them")
    func beginAndEnd() async throws {
        let cache = try TemporaryDirectory()
        let (manager, _) = try makeManager(cache: cache.path)
        #expect(try manager.beginAccessingIfLocal([Tag("Level1")]) == nil, "conditional request on remote packs")
        #expect(manager.state(of: PackNumber(1)) == .notDownloaded, "a conditional request never downloads")
        let packs = try await manager.beginAccessing([Tag("Level1")])
        #expect(Set(packs.map(\.rawValue)) == [1, 2])
        #expect(manager.state(of: PackNumber(1)) == .inUse)
        #expect(manager.state(of: PackNumber(2)) == .inUse)
        #expect(manager.state(of: PackNumber(3)) == .notDownloaded)
        let again = try #require(try manager.beginAccessingIfLocal([Tag("Level1")]))
        #expect(manager.status()[2].retainCount == 2)
        manager.endAccessing(again)
        manager.endAccessing(packs)
        #expect(manager.status().allSatisfy { $0.retainCount == 0 })
    }

    @Test("unknown tags and the in-use limit fail clearly and retain nothing")
    func failures() async throws {
        let cache = try TemporaryDirectory()
        let (manager, origin) = try makeManager(cache: cache.path, maximumInUse: 2_000)
        do {
            _ = try await manager.beginAccessing([Tag("Level1"), Tag("Nope")])
            Issue.record("unknown tag accepted")
        } catch {
            #expect(error == .invalidTag(Tag("Nope")))
            #expect(error.description.contains("Nope"))
        }
        _ = try await manager.beginAccessing([Tag("Level1")])
        do {
            _ = try await manager.beginAccessing([Tag("Level2")])
            Issue.record("the in-use limit was not enforced")
        } catch {
            guard case .exceedsMaximumInUse = error else { throw error }
            #expect(error.description.contains("--max-in-use"))
        }
        #expect(manager.state(of: PackNumber(3)) == .notDownloaded)
        #expect(origin.downloads(of: bundle.manifest.packs[3].file) == 0)
        #expect(manager.cacheStatus().inUseBytes == 1_500)
    }

    @Test("a failed fetch releases the packs already retained")
    func partialFailure() async throws {
        let cache = try TemporaryDirectory()
        let (manager, origin) = try makeManager(cache: cache.path)
        origin.setFile(bundle.manifest.packs[2].file, nil)
        do {
            _ = try await manager.beginAccessing([Tag("Level1")])
            Issue.record("a request succeeded without its shared pack")
        } catch {
            guard case .fetchFailed(let pack, _) = error else { throw error }
            #expect(pack == PackID("Level1+Level2"))
        }
        #expect(manager.status().allSatisfy { $0.retainCount == 0 })
    }
}

/// Packs an update left behind are evicted with the reason `update`.
@Suite("Purger: packs of older bundle versions", .timeLimit(.minutes(1)))
struct OlderVersionEvictionTests {
    @Test("a pack only an older bundle version named is evicted first, reported with reason update")
    func olderVersionEvictedAsUpdate() async throws {
        let cache = try TemporaryDirectory()
        let logger = Logger(label: "test")
        let old = SyntheticBundle(packContents: [(.base, SyntheticBundle.bytes(100, seed: 0)),
                                                 (PackID("Level1"), SyntheticBundle.bytes(1_000, seed: 1)),
                                                 (PackID("Level2"), SyntheticBundle.bytes(1_000, seed: 2))])
        // The next version changes Level1's bytes: the old Level1 pack is named by no pack now.
        let new = SyntheticBundle(packContents: [(.base, SyntheticBundle.bytes(100, seed: 0)),
                                                 (PackID("Level1"), SyntheticBundle.bytes(1_000, seed: 9)),
                                                 (PackID("Level2"), SyntheticBundle.bytes(1_000, seed: 2))])
        func manager(_ bundle: SyntheticBundle, budget: Int64) throws -> ResourceManager {
            let store = try PackStore(root: cache.path, logger: logger)
            let downloader = PackDownloader(origin: FakeOrigin(files: bundle.files), store: store,
                                            chunkSize: bundle.manifest.chunkSize, logger: logger)
            return try ResourceManager(manifest: bundle.manifest, store: store, downloader: downloader,
                                       limits: CacheLimits(budget: ByteCount(budget)), logger: logger)
        }
        let first = try manager(old, budget: 1 << 20)
        for n in 0...2 { try await first.makeLocal(PackNumber(UInt32(n))) }
        await first.shutdown()

        // 2,100 bytes cached (base, Level2 and the old Level1): over a 2,000-byte budget.
        let second = try manager(new, budget: 2_000)
        let events = second.events.subscribe()
        let freed = second.purgeForPressure(reason: .manual)
        #expect(freed == 1_000, "only the pack of the older version goes")
        // Published before purgeForPressure returns; the suite's time limit bounds the wait anyway.
        let evicted = freed > 0 ? await events.next() : nil
        events.finish()
        #expect(evicted?.event == .evicted)
        #expect(evicted?.pack == "Level1 (older bundle version)")
        #expect(evicted?.reason == "update", "\(String(describing: evicted))")
        #expect(evicted?.rule == "older bundle version first")
        #expect(second.state(of: PackNumber(2)) == .downloaded, "current packs stay")
    }
}
