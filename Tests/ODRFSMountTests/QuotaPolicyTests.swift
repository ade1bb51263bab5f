import Foundation
import ODRFSControl
import ODRFSCore
@testable import ODRFSMount
import ODRFSStore
import TestSupport
import Testing

/// The purge decision on its own: a snapshot of the ledger in, victims out, each with
/// its reason and rule. No disk, no purger.
@Suite("Quota policy")
struct QuotaPolicyTests {
    /// Base plus Level1…Level5 of 1,000 bytes, and Big of 5,000.
    static let bundle = SyntheticBundle(packContents: [(.base, SyntheticBundle.bytes(100, seed: 0))]
        + (1...5).map { (PackID("Level\($0)"), SyntheticBundle.bytes(1_000, seed: UInt8($0))) }
        + [(PackID("Big"), SyntheticBundle.bytes(5_000, seed: 9))])

    /// Every pack local (plus one orphan of an older version, if asked), accessed in the
    /// order `accessOrder` (pack numbers), with `retained` retained.
    func ledger(budget: Int64? = nil, minimumFree: Int64? = nil, accessOrder: [Int] = [1, 2, 3, 4, 5, 6], retained: Set<Int> = [],
                orphan: Bool = false, priorities: [String: Double] = [:]) -> CacheLedger {
        let identity = FileIdentity(size: 0, modifiedNanoseconds: 0, inode: 0)
        var verified: [String: CachedPack] = [:]
        for pack in Self.bundle.manifest.packs {
            verified[pack.sha256.hex] = CachedPack(sha256: pack.sha256, packID: pack.id, bytes: pack.bytes, firstFetch: .distantPast, identity: identity)
        }
        if orphan {
            let hash = ContentHash(hex: String(repeating: "7", count: 64))!
            verified[hash.hex] = CachedPack(sha256: hash, packID: PackID("Level1"), bytes: ByteCount(1_000), firstFetch: .distantPast, identity: identity)
        }
        let limits = CacheLimits(budget: budget.map(ByteCount.init), minimumFree: minimumFree.map(ByteCount.init))
        let ledger = CacheLedger(manifest: Self.bundle.manifest, limits: limits, clock: Date.init, verified: verified,
                                 priorityOverrides: Dictionary(uniqueKeysWithValues: priorities.map { (Tag($0.key), $0.value) }))
        for (time, index) in accessOrder.enumerated() {
            ledger.transaction { state in
                state.retain(index, at: Date(timeIntervalSince1970: Double(time + 1) * 100))
                if !retained.contains(index) { _ = state.release(index) }
            }
        }
        return ledger
    }

    func names(_ victims: [QuotaPolicy.Victim]) -> [String] { victims.map(\.id) }

    @Test("least recently used first, within the lowest preservation priority first")
    func priorityThenLRU() {
        let ledger = ledger(accessOrder: [3, 1, 2, 4, 5, 6], priorities: ["Level3": 0.9])
        let policy = QuotaPolicy(limits: ledger.limits)
        let victims = ledger.read { policy.victims(freeing: 2_500, from: $0, reason: .manual) }
        #expect(names(victims) == ["Level1", "Level2", "Level4"], "Level3 is the oldest but keeps its high priority")
        #expect(victims.first?.rule.hasPrefix("lowest preservation priority first (0.0), then least recently used") == true)
    }

    @Test("packs of an older bundle version go first, reported as update")
    func olderRevisionsFirst() {
        let ledger = ledger(orphan: true)
        let policy = QuotaPolicy(limits: CacheLimits(budget: ByteCount(100)))
        let victims = ledger.read { policy.victims(freeing: 1_500, from: $0, reason: .manual) }
        #expect(names(victims) == ["Level1 (older bundle version)", "Level1"])
        #expect(victims.first?.reason == .update)
        #expect(victims.first?.rule == "older bundle version first")
        #expect(victims.last?.reason == .cacheSize)
    }

    @Test("retained, downloading and base packs are never chosen, however much is needed")
    func retainedNeverChosen() {
        let ledger = ledger(retained: [2, 4])
        ledger.transaction { state in
            _ = state.markMissing(5)
            state.reserve(5, for: DownloadCoordinator.Download(priority: .background, ticket: 1))
        }
        let policy = QuotaPolicy(limits: ledger.limits)
        let victims = ledger.read { policy.victims(freeing: .max, from: $0, reason: .diskFull) }
        #expect(Set(names(victims)) == ["Level1", "Level3", "Big"])
        #expect(victims.allSatisfy { $0.reason == .minFree })
        #expect(ledger.read { policy.keptOnRequest(from: $0, matching: { _ in true }) }.map(\.rawValue) == ["Level2", "Level4"])
        let requested = ledger.read { policy.victimsOnRequest(from: $0, matching: { $0 != PackNumber(3) }) }
        #expect(names(requested) == ["Level1", "Big"])
        #expect(requested.allSatisfy { $0.reason == .manual && $0.rule == "purge request" })
    }

    @Test("the base's variants (untagged packs such as base[locale=it]) are never chosen nor evicted, like the base")
    func baseVariantsAreKept() {
        var manifest = SyntheticBundle(packContents: [(.base, SyntheticBundle.bytes(100, seed: 0)),
                                                      (PackID("Level1"), SyntheticBundle.bytes(1_000, seed: 1)),
                                                      (PackID("base[locale=it]"), SyntheticBundle.bytes(1_000, seed: 2))]).manifest
        manifest.packs[2].tags = []
        manifest.packs[2].variant = VariantAssignment([(VariantKey(validating: "locale")!, VariantValue(validating: "it")!)])
        manifest.tags = manifest.tags.filter { $0.tag == Tag("Level1") }
        #expect(manifest.basePacks == [PackNumber(0), PackNumber(2)])
        let identity = FileIdentity(size: 0, modifiedNanoseconds: 0, inode: 0)
        let verified = Dictionary(uniqueKeysWithValues: manifest.packs.map {
            ($0.sha256.hex, CachedPack(sha256: $0.sha256, packID: $0.id, bytes: $0.bytes, firstFetch: .distantPast, identity: identity))
        })
        let ledger = CacheLedger(manifest: manifest, limits: CacheLimits(budget: ByteCount(1)), clock: Date.init, verified: verified,
                                 priorityOverrides: [:])
        let policy = QuotaPolicy(limits: ledger.limits)
        let victims = ledger.read { policy.victims(freeing: .max, from: $0, reason: .diskFull) }
        #expect(names(victims) == ["Level1"])
        #expect(ledger.read { policy.victimsOnRequest(from: $0, matching: { _ in true }) }.map(\.id) == ["Level1"])
        let evicted = ledger.transaction { state in
            state.evict(QuotaPolicy.Victim(key: .pack(2), sha256: manifest.packs[2].sha256.hex, id: "base[locale=it]", bytes: 1_000,
                                           priority: 0, lastAccess: nil, reason: .manual, rule: ""), trash: { _, _ in true })
        }
        #expect(!evicted, "the ledger refuses to evict it, whoever asks")
    }

    @Test("one pack large enough is chosen over several older ones only when the oldest is too big")
    func bestFit() {
        // Big (5,000) is the least recently used: for 800 bytes one 1,000-byte pack does.
        let ledger = ledger(accessOrder: [6, 1, 2, 3, 4, 5])
        let policy = QuotaPolicy(limits: ledger.limits)
        #expect(names(ledger.read { policy.victims(freeing: 800, from: $0, reason: .manual) }) == ["Level1"])
        #expect(names(ledger.read { policy.victims(freeing: 5_000, from: $0, reason: .manual) }) == ["Big"])
    }

    @Test("watermarks: over the budget cleans to 75 %, under the floor to 125 %; a release wakes only with a budget; prefetch stops at the budget")
    func watermarks() {
        // 10,100 bytes cached.
        let budgeted = ledger(budget: 8_000)
        let budget = QuotaPolicy(limits: budgeted.limits)
        #expect(budgeted.read { budget.bytesToFree($0, available: nil) } == 10_100 - 6_000)
        #expect(budgeted.read { budget.isOverBudget($0) })
        #expect(budget.shouldLook(after: .afterRelease))
        let floored = ledger(minimumFree: 1_000)
        let floor = QuotaPolicy(limits: floored.limits)
        #expect(floor.watchesFreeSpace)
        #expect(floored.read { floor.bytesToFree($0, available: 2_000) } == 0)
        #expect(floored.read { floor.bytesToFree($0, available: 500) } == 1_250 - 500)
        #expect(!floor.shouldLook(after: .afterRelease))
        #expect(floor.shouldLook(after: .afterDownload))
        #expect(floored.read { floor.victims(freeing: 0, from: $0, reason: .manual) }.isEmpty)
        // Prefetch stops at the budget (reservations counted); without one it never does.
        let roomy = QuotaPolicy(limits: CacheLimits(budget: ByteCount(20_000)))
        #expect(budgeted.read { roomy.admitsPrefetch(of: 9_900, into: $0) })
        #expect(!budgeted.read { roomy.admitsPrefetch(of: 9_901, into: $0) })
        #expect(!budgeted.read { budget.admitsPrefetch(of: 1, into: $0) })
        #expect(floored.read { floor.admitsPrefetch(of: .max, into: $0) })
    }
}
