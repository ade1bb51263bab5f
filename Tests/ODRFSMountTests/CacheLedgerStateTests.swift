import Foundation
import ODRFSCore
import ODRFSFetch
@testable import ODRFSMount
import ODRFSStore
import TestSupport
import Testing

/// The ledger's intents driven directly, thousands of random steps per seed, against a
/// model of the disk: the files a publish, a backing-file copy or an eviction's trash
/// rename create or remove. After every step: the ledger's own invariants hold
/// (``CacheLedger/State/violations()``), `cachedBytes` equals the bytes of the files on
/// the model disk and of the files the ledger says are local, reservations equal the
/// downloads in flight (and end at zero), and no retained pack was ever evicted.
@Suite("Cache ledger: intents against a model")
struct CacheLedgerStateTests {
    static let bundle = SyntheticBundle(packContents: [(.base, SyntheticBundle.bytes(100, seed: 0))]
        + [700, 1_000, 1_300, 400, 2_200, 900, 1_600, 300].enumerated().map { offset, size in
            (PackID("Level\(offset + 1)"), SyntheticBundle.bytes(size, seed: UInt8(offset + 1)))
        })

    /// Two packs of an older bundle version and this version's Level2, as the cache index lists them.
    static func verified() -> [String: CachedPack] {
        let identity = FileIdentity(size: 0, modifiedNanoseconds: 0, inode: 0)
        var verified: [String: CachedPack] = [:]
        for (n, bytes) in [(1, Int64(500)), (2, 800)] {
            let hash = ContentHash(hex: String(repeating: "\(n)", count: 64))!
            verified[hash.hex] = CachedPack(sha256: hash, packID: PackID("Old\(n)"), bytes: ByteCount(bytes), firstFetch: .distantPast, identity: identity)
        }
        let level2 = bundle.manifest.packs[2]
        verified[level2.sha256.hex] = CachedPack(sha256: level2.sha256, packID: level2.id, bytes: level2.bytes, firstFetch: .distantPast, identity: identity)
        return verified
    }

    @Test("random intents keep the books equal to the disk, reservations to downloads, retained packs local", arguments: [UInt64(11), 12, 13])
    func randomIntents(seed: UInt64) throws {
        var random = SplitMix(seed: seed)
        let manifest = Self.bundle.manifest
        let verified = Self.verified()
        let ledger = CacheLedger(manifest: manifest, limits: CacheLimits(budget: ByteCount(5_000)), clock: { Date(timeIntervalSince1970: 1_000) },
                                 verified: verified, priorityOverrides: [:])
        let policy = QuotaPolicy(limits: ledger.limits)
        let packs = manifest.packs.indices
        func bytes(_ index: Int) -> Int64 { manifest.packs[index].bytes.value }
        // The model disk: file name → bytes; and the model's retains and downloads.
        var disk = Dictionary(uniqueKeysWithValues: verified.values.map { ($0.sha256, $0.bytes) })
        var retains = [Int](repeating: 0, count: packs.count)
        var downloading: Set<Int> = []
        var evictedWhileRetained: [String] = []
        var now = Date(timeIntervalSince1970: 1_000)

        for step in 1...4_000 {
            let index = Int.random(in: packs, using: &random)
            let pack = PackNumber(UInt32(index))
            let sha = manifest.packs[index].sha256.hex
            now += 1
            let retainedLocal = ledger.read { state in packs.filter { retains[$0] > 0 && state.slots[$0].isLocal } }
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<15:  // an open of a local pack
                if ledger.retainIfLocal([pack]) { retains[index] += 1 }
            case 15..<22:  // a progressive open joins a download whose prefix is verified
                if downloading.contains(index) {
                    ledger.transaction { state in _ = state.retain(index, at: now) }
                    retains[index] += 1
                }
            case 22..<40:
                if let held = retains.indices.filter({ retains[$0] > 0 }).randomElement(using: &random) {
                    _ = ledger.release(PackNumber(UInt32(held)))
                    retains[held] -= 1
                }
            case 40..<52:  // a download starts
                let started = ledger.transaction { state -> Bool in
                    guard !state.slots[index].isLocal, state.slots[index].download == nil else { return false }
                    state.reserve(index, for: DownloadCoordinator.Download(priority: .background, ticket: UInt64(step)))
                    return true
                }
                if started { downloading.insert(index) }
            case 52..<64:  // a download ends: published (renamed into place) or failed
                guard let done = downloading.randomElement(using: &random) else { break }
                let published = Bool.random(using: &random)
                _ = ledger.transaction { $0.settleDownload(done, published: published, fetched: true) }
                downloading.remove(done)
                if published { disk[manifest.packs[done].sha256.hex] = bytes(done) }
            case 64..<72:  // a passthrough backing file is copied out
                let offset = Int64.random(in: 0..<4, using: &random) * 100
                let size = Int64.random(in: 1...200, using: &random)
                _ = ledger.attachBackingFile(pack, offset: offset, bytes: size) {
                    disk["\(sha)@\(offset)"] = size
                    return true
                }
            case 72..<76:  // an unretained pack's file vanishes; the next open finds out
                if retains[index] == 0, ledger.read({ $0.slots[index].isLocal }) {
                    disk[sha] = nil
                    _ = ledger.markMissing(pack)
                }
            case 76..<95:
                let onRequest = Int.random(in: 0..<3, using: &random) == 0
                let needed = Int64.random(in: 0...6_000, using: &random)
                _ = ledger.evict(choosing: { state in
                    onRequest ? policy.victimsOnRequest(from: state, matching: { _ in true })
                        : policy.victims(freeing: needed, from: state, reason: .manual)
                }, trash: { victimSHA, offsets in
                    if let victim = packs.first(where: { manifest.packs[$0].sha256.hex == victimSHA }), retains[victim] > 0 {
                        evictedWhileRetained.append("step \(step): \(manifest.packs[victim].id)")
                    }
                    disk[victimSHA] = nil
                    for offset in offsets { disk["\(victimSHA)@\(offset)"] = nil }
                    return true
                })
            default:
                let tag = Tag("Level\(Int.random(in: 1...8, using: &random))")
                ledger.setPriorityOverride([nil, 0.2, 0.8].randomElement(using: &random)!, for: tag)
            }
            let context = "seed \(seed), step \(step)"
            let state = ledger.read { $0 }
            try #require(state.violations().isEmpty, "\(context): \(state.violations())")
            try #require(evictedWhileRetained.isEmpty, "\(context): evicted while retained: \(evictedWhileRetained)")
            let onDisk = disk.values.reduce(0, +)
            let saysLocal = packs.filter { state.slots[$0].isLocal }.reduce(Int64(0)) { $0 + bytes($1) + state.slots[$1].backingBytes }
                + packs.filter { !state.slots[$0].isLocal }.reduce(Int64(0)) { $0 + state.slots[$1].backingBytes } + state.orphanBytes
            try #require(state.cachedBytes == onDisk, "\(context): \(state.cachedBytes) cached, \(onDisk) on disk")
            try #require(state.cachedBytes == saysLocal, "\(context): \(state.cachedBytes) cached, local files hold \(saysLocal)")
            try #require(state.reservedBytes == downloading.reduce(0) { $0 + bytes($1) }, "\(context): reservations")
            for index in retainedLocal {
                try #require(state.slots[index].isLocal, "\(context): retained \(manifest.packs[index].id) is no longer local")
            }
            try #require(packs.allSatisfy { state.slots[$0].retainCount == retains[$0] }, "\(context): retain counts")
        }
        // Every download ends: reservations return to zero.
        for done in downloading { _ = ledger.transaction { $0.settleDownload(done, published: false, fetched: true) } }
        #expect(ledger.read { $0.reservedBytes } == 0)
        #expect(ledger.read { $0.violations() }.isEmpty)
    }
}
