import Foundation
import ODRFSStore
import Testing

/// Issue 23, item 3: the store's purge order across bundles.
@Suite("Store purge plan")
struct StorePurgePlanTests {
    /// 64 hex digits for `n` (not `String(format:)`: 100,000 of those cost seconds in a debug build).
    func hash(_ n: Int) -> String {
        let digits = String(n, radix: 16)
        return String(repeating: "0", count: 64 - digits.count) + digits
    }
    func day(_ n: Int) -> Date { Date(timeIntervalSince1970: Double(n) * 86_400) }
    func object(_ n: Int, used: Int?, bytes: Int64 = 100) -> StorePurgePlan.Object {
        StorePurgePlan.Object(sha256: hash(n), bytes: bytes, lastAccess: used.map(day))
    }

    @Test("unreferenced first (LRU), then idle bundles, then running ones; never a mounted bundle's base pack")
    func classesInOrder() {
        let objects = [object(1, used: 50), object(2, used: 1), object(3, used: 2), object(4, used: 3), object(5, used: 4), object(6, used: 40)]
        let idle = StorePurgePlan.MountedBundle(key: "idle", running: false, packs: [hash(3): (0.5, false), hash(4): (0.5, true)])
        let running = StorePurgePlan.MountedBundle(key: "running", running: true, packs: [hash(2): (0.5, false), hash(5): (0.5, false)])
        let victims = StorePurgePlan.victims(freeing: .max, objects: objects, bundles: [idle, running])
        #expect(victims.map(\.sha256) == [hash(6), hash(1), hash(3), hash(2), hash(5)])
        #expect(victims.map(\.purgeClass) == [.unreferenced, .unreferenced, .idleBundle, .runningBundle, .runningBundle])
        #expect(!victims.contains { $0.sha256 == hash(4) }, "a mounted bundle's base pack was chosen")
        #expect(victims[2].rule.contains("bundle idle not running"))
    }

    @Test("within a bundle its own priority first, then LRU; bundles merged by the last use of each queue's head, so one's priorities never outrank another's")
    func mergedQueues() {
        // Bundle A: pack 1 (priority 0.1, used day 30), pack 2 (priority 0.9, used day 1).
        // Bundle B: pack 3 (priority 0.5, used day 10), pack 4 (priority 0.5, used day 20).
        let objects = [object(1, used: 30), object(2, used: 1), object(3, used: 10), object(4, used: 20)]
        let a = StorePurgePlan.MountedBundle(key: "a", running: false, packs: [hash(1): (0.1, false), hash(2): (0.9, false)])
        let b = StorePurgePlan.MountedBundle(key: "b", running: false, packs: [hash(3): (0.5, false), hash(4): (0.5, false)])
        let order = StorePurgePlan.victims(freeing: .max, objects: objects, bundles: [a, b]).map(\.sha256)
        // A's queue: 1 then 2 (priority); B's: 3 then 4. Heads 1 (day 30) and 3 (day 10): B first.
        #expect(order == [hash(3), hash(4), hash(1), hash(2)])
    }

    @Test("a pack two bundles name is in the running class if either runs, and taken once")
    func sharedPacks() {
        let objects = [object(1, used: 1), object(2, used: 5)]
        let idle = StorePurgePlan.MountedBundle(key: "idle", running: false, packs: [hash(1): (0, false), hash(2): (0, false)])
        let running = StorePurgePlan.MountedBundle(key: "running", running: true, packs: [hash(1): (0, false)])
        let victims = StorePurgePlan.victims(freeing: .max, objects: objects, bundles: [idle, running])
        #expect(victims.map(\.sha256) == [hash(2), hash(1)])
        #expect(victims.map(\.purgeClass) == [.idleBundle, .runningBundle])
    }

    @Test("stops once enough is chosen; nothing when nothing is needed")
    func stopsWhenEnough() {
        let objects = (1...10).map { object($0, used: $0) }
        #expect(StorePurgePlan.victims(freeing: 250, objects: objects, bundles: []).count == 3)
        #expect(StorePurgePlan.victims(freeing: 0, objects: objects, bundles: []).isEmpty)
    }

    @Test("100,000 objects over 20 bundles: one decision", .timeLimit(.minutes(1)))
    func manyObjects() {
        var objects: [StorePurgePlan.Object] = []
        var bundles = (0..<20).map { StorePurgePlan.MountedBundle(key: "b\($0)", running: $0 % 2 == 0, packs: [:]) }
        for n in 0..<100_000 {
            objects.append(object(n, used: n % 1000))
            if n % 4 != 0 { bundles[n % 20].packs[hash(n)] = (Double(n % 3) / 3, false) }
        }
        let victims = StorePurgePlan.victims(freeing: 5_000_000, objects: objects, bundles: bundles)
        #expect(victims.count == 50_000)
        #expect(victims.prefix(25_000).allSatisfy { $0.purgeClass == .unreferenced })
    }
}
