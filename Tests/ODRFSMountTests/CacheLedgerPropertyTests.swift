import Foundation
import Logging
import ODRFSCore
import ODRFSFetch
@testable import ODRFSMount
import ODRFSStore
import TestSupport
import Testing

/// Random sequences of the cache's operations — retains, releases, downloads, purges
/// under pressure (a byte budget and a free-space floor on a pretend disk) and on request, vanished files, priority changes, a bundle update that
/// leaves packs of the older version behind — against a model that knows only the retain
/// counts. After every step the cache must agree with the model and with the disk:
/// no retained pack evicted, cached bytes equal to the bytes of the files the ledger says
/// are local (and to what `packs/` holds), reservations back at zero, in-use bytes equal
/// to the retained packs' bytes. Seeded: a failure names its seed and step.
@Suite("Cache ledger: property", .timeLimit(.minutes(1)))
struct CacheLedgerPropertyTests {
    /// Base plus eight level packs of different sizes (so best fit and LRU both matter).
    static func bundle(version: UInt8) -> SyntheticBundle {
        let sizes = [700, 1_000, 1_300, 400, 2_200, 900, 1_600, 300]
        return SyntheticBundle(packContents: [(.base, SyntheticBundle.bytes(100, seed: 0))]
            + sizes.enumerated().map { offset, size in
                // An update changes the odd levels' bytes: their old packs become orphans.
                let seed = UInt8(offset + 1) &+ (offset % 2 == 1 ? version &* 16 : 0)
                return (PackID("Level\(offset + 1)"), SyntheticBundle.bytes(size, seed: seed))
            })
    }

    struct Run {
        let cache: TemporaryDirectory
        let clock = LockedValue(Date(timeIntervalSince1970: 1_000))
        /// A pretend disk holding the cache: its free space is this less what `packs/` holds.
        static let diskSize: Int64 = 9_000

        func manager(_ bundle: SyntheticBundle, budget: Int64) throws -> ResourceManager {
            var logger = Logger(label: "test")
            logger.logLevel = .critical  // thousands of steps; full-disk refusals are expected
            let store = try PackStore(root: cache.path, logger: logger)
            let downloader = PackDownloader(origin: FakeOrigin(files: bundle.files), store: store,
                                            chunkSize: bundle.manifest.chunkSize, logger: logger)
            let clock = self.clock
            let run = self
            return try ResourceManager(manifest: bundle.manifest, store: store, downloader: downloader,
                                       limits: CacheLimits(budget: ByteCount(budget), minimumFree: ByteCount(800)), logger: logger,
                                       clock: { clock.withLock { $0 } }, availableBytes: { Self.diskSize - run.bytesOnDisk() })
        }

        /// Bytes of the regular files in `packs/`: what is on disk.
        func bytesOnDisk() -> Int64 {
            let packs = cache.path + "/packs"
            let names = (try? FileManager.default.contentsOfDirectory(atPath: packs)) ?? []
            return names.reduce(Int64(0)) { sum, name in
                sum + ((try? FileManager.default.attributesOfItem(atPath: packs + "/" + name)[.size] as? Int64) ?? 0)
            }
        }
    }

    @Test("random operations keep retained packs, the byte accounting and reservations right", arguments: [UInt64(1), 2, 3])
    func randomOperations(seed: UInt64) async throws {
        var random = SplitMix(seed: seed)
        let run = Run(cache: try TemporaryDirectory())
        var steps = 0
        for version in UInt8(1)...2 {
            let bundle = Self.bundle(version: version)
            let manager = try run.manager(bundle, budget: 4_000)
            var retains = [Int](repeating: 0, count: bundle.manifest.packs.count)
            for _ in 0..<600 {
                steps += 1
                let step = "seed \(seed), step \(steps)"
                let level = Int.random(in: 1..<bundle.manifest.packs.count, using: &random)
                let pack = PackNumber(UInt32(level))
                run.clock.withLock { $0 += Double(Int.random(in: 1...5, using: &random)) }
                switch Int.random(in: 0..<100, using: &random) {
                case 0..<30:
                    do {
                        try await manager.retain(pack)
                        retains[level] += 1
                    } catch {
                        // The pretend disk is full of retained packs: refused, nothing retained.
                        guard error.kind == .noSpace else { throw error }
                    }
                case 30..<60:
                    if let held = retains.indices.filter({ retains[$0] > 0 }).randomElement(using: &random) {
                        manager.release(PackNumber(UInt32(held)))
                        retains[held] -= 1
                    }
                case 60..<72:
                    do {
                        try await manager.makeLocal(pack)
                    } catch {
                        guard error.kind == .noSpace else { throw error }
                    }
                case 72..<82:
                    manager.purgeForPressure(reason: .manual)
                case 82..<88:
                    let chosen = Set((1..<bundle.manifest.packs.count).filter { _ in Bool.random(using: &random) })
                    manager.purgeNow(matching: { chosen.contains(Int($0.rawValue)) })
                case 88..<94:
                    // The cached copy of an unretained pack vanishes; the next open finds out.
                    if retains[level] == 0, manager.state(of: pack) == .downloaded {
                        unlink(manager.path(of: pack))
                        manager.markMissing(pack)
                    }
                default:
                    let priority = [nil, 0.1, 0.5, 0.9].randomElement(using: &random)!
                    manager.setPreservationPriority(priority, for: Tag("Level\(level)"))
                }
                try check(manager, bundle: bundle, retains: retains, run: run, step)
            }
            for level in retains.indices { for _ in 0..<retains[level] { manager.release(PackNumber(UInt32(level))) } }
            await manager.shutdown()
        }
    }

    private func check(_ manager: ResourceManager, bundle: SyntheticBundle, retains: [Int], run: Run, _ step: String) throws {
        let status = manager.status()
        let cache = manager.cacheStatus()
        var localBytes: Int64 = 0
        var retainedBytes: Int64 = 0
        for (level, pack) in status.enumerated() {
            #expect(pack.retainCount == retains[level], "\(step): \(pack.id) has \(pack.retainCount) retains, the model \(retains[level])")
            if retains[level] > 0 {
                try #require(pack.state == .inUse, "\(step): retained \(pack.id) is \(pack.state)")
                try #require(access(manager.path(of: pack.number), F_OK) == 0, "\(step): retained \(pack.id) has no file")
                retainedBytes += pack.bytes.value
            }
            if pack.state == .downloaded || pack.state == .inUse { localBytes += pack.bytes.value }
        }
        let packBytes = cache.cachedBytes - cache.metadataBytes
        try #require(cache.reservedBytes == 0, "\(step): \(cache.reservedBytes) bytes still reserved")
        try #require(packBytes == localBytes + cache.orphanBytes,
                     "\(step): \(packBytes) cached, but local packs and orphans add up to \(localBytes + cache.orphanBytes)")
        try #require(packBytes == run.bytesOnDisk(), "\(step): \(packBytes) cached, \(run.bytesOnDisk()) on disk")
        try #require(cache.inUseBytes == retainedBytes, "\(step): \(cache.inUseBytes) in use, retained packs hold \(retainedBytes)")
    }
}
