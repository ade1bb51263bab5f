import Foundation
import ODRFSCore
import ODRFSStore
import Testing

@Suite("Eviction order and pressure")
struct EvictionPlannerTests {
    func candidate(_ key: String, _ bytes: Int64, priority: Double = 0, at time: Double?) -> EvictionCandidate {
        EvictionCandidate(key: key, bytes: bytes, priority: priority, lastAccess: time.map { Date(timeIntervalSince1970: $0) })
    }

    @Test("lowest priority goes first, then least recently used")
    func priorityThenLRU() {
        let candidates = [
            candidate("keep-high-old", 10, priority: 0.9, at: 1),
            candidate("low-new", 10, priority: 0, at: 50),
            candidate("low-old", 10, priority: 0, at: 5),
            candidate("mid", 10, priority: 0.5, at: 2),
        ]
        #expect(EvictionPlanner.plan(freeing: 25, from: candidates).map(\.key) == ["low-old", "low-new", "mid"])
        #expect(EvictionPlanner.plan(freeing: 10, from: candidates).map(\.key) == ["low-old"])
        #expect(EvictionPlanner.plan(freeing: 0, from: candidates).isEmpty)
    }

    @Test("never-accessed packs (prefetched) go before accessed ones of the same priority")
    func neverAccessedFirst() {
        let candidates = [candidate("used", 10, at: 1), candidate("prefetched", 10, at: nil)]
        #expect(EvictionPlanner.plan(freeing: 5, from: candidates).map(\.key) == ["prefetched"])
    }

    @Test("a smaller pack that frees enough is chosen over a huge older one")
    func noOverPurging() {
        let candidates = [candidate("huge-oldest", 500, at: 1), candidate("small", 12, at: 2), candidate("smallest-too-small", 5, at: 3)]
        #expect(EvictionPlanner.plan(freeing: 10, from: candidates).map(\.key) == ["small"])
        // When nothing small is enough, LRU order holds.
        #expect(EvictionPlanner.plan(freeing: 100, from: candidates).map(\.key) == ["huge-oldest"])
    }

    @Test("best fit stays within a priority class: a lower class is used up first")
    func bestFitRespectsPriority() {
        let candidates = [candidate("low", 5, priority: 0, at: 9), candidate("high-small", 20, priority: 1, at: 1), candidate("high-big", 100, priority: 1, at: 0)]
        #expect(EvictionPlanner.plan(freeing: 20, from: candidates).map(\.key) == ["low", "high-small"])
    }

    @Test("freeing more than exists evicts every candidate")
    func everything() {
        let candidates = [candidate("a", 1, at: 1), candidate("b", 2, at: 2)]
        #expect(Set(EvictionPlanner.plan(freeing: 1_000, from: candidates).map(\.key)) == ["a", "b"])
    }

    @Test("pressure: over budget cleans to 75 %, low free space to 125 % of the floor, reservations count")
    func pressure() {
        let limits = CacheLimits(budget: ByteCount(1_000), minimumFree: ByteCount(400))
        #expect(limits.bytesToFree(cached: 900, reserved: 0, available: 10_000) == 0)
        #expect(limits.bytesToFree(cached: 900, reserved: 200, available: 10_000) == 1_100 - 750)
        #expect(limits.bytesToFree(cached: 100, reserved: 0, available: 300) == 500 - 300)
        #expect(limits.bytesToFree(cached: 100, reserved: 100, available: 450) == 500 - 350)
        #expect(limits.bytesToFree(cached: 1_200, reserved: 0, available: 100) == max(1_200 - 750, 500 - 100))
        #expect(CacheLimits().bytesToFree(cached: 1 << 40, reserved: 0, available: 0) == 0, "no limits, no pressure")
        #expect(limits.isOverBudget(cached: 999, reserved: 2))
        #expect(!limits.isOverBudget(cached: 999, reserved: 1))
    }

    // `--min-free 8000P` parses (8000 << 50 fits in 63 bits), but 125 % of it does not fit
    // in an Int64: converting it trapped, killing the daemon at its first purge check.
    @Test("pressure never traps on the largest limits a command line accepts")
    func pressureWithHugeLimits() throws {
        let floor = try #require(ByteCount(parsing: "8000P"))
        let limits = CacheLimits(budget: ByteCount(.max), minimumFree: floor)
        #expect(limits.bytesToFree(cached: 0, reserved: 0, available: 1 << 30) == .max - (1 << 30))
        #expect(limits.bytesToFree(cached: 0, reserved: 1 << 52, available: 0) == .max)
        #expect(CacheLimits(minimumFree: ByteCount(.max)).bytesToFree(cached: 0, reserved: 1 << 52, available: -(1 << 52)) == .max)
        #expect(!limits.isOverBudget(cached: .max, reserved: 1 << 52), "saturates at the budget, not over it")
        #expect(CacheLimits(budget: ByteCount(1_000)).bytesToFree(cached: .max, reserved: .max, available: nil) == .max - 750)
    }
}
