import Foundation
import ODRFSRuntime
@testable import ODRFSMount
import Synchronization
import Testing

/// ``HeapRelease`` folds requests: never two trims at once, never a request lost.
@Suite(.timeLimit(.minutes(1))) struct HeapReleaseTests {
    /// A trim that takes a while and records how many ran at once.
    final class SlowTrim: Sendable {
        let started = Atomic<Int>(0)
        let running = Atomic<Int>(0)
        let mostAtOnce = Atomic<Int>(0)
        let gate = Mutex(true)

        func trim() {
            started.add(1, ordering: .relaxed)
            let now = running.add(1, ordering: .relaxed).newValue
            _ = mostAtOnce.max(now, ordering: .relaxed)
            // Held while the test keeps `gate` closed, however long the suite's load starves
            // the test's own task (over 10 s seen); the test opens it whatever happens.
            while gate.withLock({ $0 }) { usleep(2_000) }
            running.subtract(1, ordering: .relaxed)
        }
    }

    @Test func requestsFoldIntoOneTrimAndOneMore() async throws {
        let slow = SlowTrim()
        // An executor of its own: the suite's mounts keep the shared one busy for seconds.
        let io = IOExecutor(name: "heap-release-test", threads: 2)
        let release = HeapRelease(io: io, trim: { slow.trim() })
        defer { slow.gate.withLock { $0 = false } }
        release.request()
        // The first trim is running (held at the gate) before more requests come.
        #expect(await waitUntil { slow.started.load(ordering: .relaxed) == 1 })
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
