import Foundation
@testable import ODRFSMount
import Synchronization
import Testing

/// ``HeapRelease`` folds requests: never two trims at once, never a request lost.
@Suite(.timeLimit(.minutes(1))) struct HeapReleaseTests {
    /// A trim that takes a while and records how many ran at once.
    final class SlowTrim: Sendable {
        let running = Atomic<Int>(0)
        let mostAtOnce = Atomic<Int>(0)
        let gate = Mutex(true)

        func trim() {
            let now = running.add(1, ordering: .relaxed).newValue
            _ = mostAtOnce.max(now, ordering: .relaxed)
            // Held while a test keeps `gate` closed (bounded: a failing test does not hang).
            for _ in 0..<500 where gate.withLock({ $0 }) { usleep(2_000) }
            running.subtract(1, ordering: .relaxed)
        }
    }

    @Test func requestsFoldIntoOneTrimAndOneMore() async throws {
        let slow = SlowTrim()
        let release = HeapRelease(trim: { slow.trim() })
        release.request()
        // The first trim is running (held at the gate) before more requests come.
        #expect(await waitUntil { slow.running.load(ordering: .relaxed) == 1 })
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<200 { group.addTask { release.request() } }
        }
        slow.gate.withLock { $0 = false }
        // One trim for the first request, exactly one more for the 200 made while it ran.
        #expect(await waitUntil { release.trims == 2 && slow.running.load(ordering: .relaxed) == 0 })
        try await Task.sleep(for: .milliseconds(100))
        #expect(release.trims == 2, "requests during a trim were not folded into one more")
        #expect(slow.mostAtOnce.load(ordering: .relaxed) == 1, "two trims ran at once")
        // Idle again: a new request is not lost.
        release.request()
        #expect(await waitUntil { release.trims == 3 })
    }

    private func waitUntil(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<3_000 {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }
}
