import Foundation
import ODRFSRuntime
import TestSupport
import Synchronization
import Testing

/// The daemon's threads for blocking calls: work runs on the pool's own threads, never on
/// the caller's, errors keep their type, at most `threadCount` calls run at once, and a
/// deadline answers the caller while a stuck call is left to finish on its own.
@Suite("IOExecutor", .timingSensitive)
struct IOExecutorTests {
    /// The calling thread (pthread_t is an integer on Linux).
    static func threadID() -> pthread_t { pthread_self() }

    struct Failure: Error, Equatable { let code: Int }

    /// How many calls run at once, and the most that ever did.
    final class Occupancy: Sendable {
        private let counts = Mutex((running: 0, peak: 0))
        func enter() { counts.withLock { $0.running += 1; $0.peak = max($0.peak, $0.running) } }
        func leave() { counts.withLock { $0.running -= 1 } }
        var peak: Int { counts.withLock { $0.peak } }
    }

    @Test("run executes on a pool thread outside any task and returns the value")
    func runsOnAPoolThread() async throws {
        let executor = IOExecutor(name: "test-io", threads: 2)
        let caller = Self.threadID()
        let (thread, inTask) = await executor.run { () -> (pthread_t, Bool) in
            (Self.threadID(), withUnsafeCurrentTask { $0 != nil })
        }
        #expect(thread != caller)
        #expect(!inTask, "a blocking call there must not hold a cooperative thread")
        #expect(executor.name == "test-io" && executor.threadCount == 2)
    }

    @Test("a typed error thrown on the pool reaches the caller unchanged")
    func typedErrors() async {
        let executor = IOExecutor(name: "test-io", threads: 1)
        do {
            _ = try await executor.run { () throws(Failure) -> Int in throw Failure(code: 7) }
            Issue.record("no error")
        } catch {
            #expect(error == Failure(code: 7))
        }
    }

    @Test("no more than threadCount calls run at once; the rest wait their turn")
    func boundedConcurrency() async {
        let executor = IOExecutor(name: "test-io", threads: 2)
        let counts = Occupancy()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    await executor.run {
                        counts.enter()
                        usleep(20_000)
                        counts.leave()
                    }
                }
            }
        }
        #expect(counts.peak == 2)
    }

    @Test("submit runs the work without waiting for it")
    func submit() async throws {
        let executor = IOExecutor(name: "test-io", threads: 1)
        let done = Atomic<Bool>(false)
        executor.submit { done.store(true, ordering: .releasing) }
        let deadline = ContinuousClock.now + .seconds(5)
        while !done.load(ordering: .acquiring), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        let ran = done.load(ordering: .acquiring)
        #expect(ran)
    }

    @Test("a call past its deadline answers timedOut at once; its late result goes to onLate")
    func deadline() async throws {
        let executor = IOExecutor(name: "test-io", threads: 1)
        let late = Mutex<Int?>(nil)
        // The call is held until the caller has its answer: had the caller waited for the
        // call, the answer would come only after the gate's 60 s timeout and `callEnded`
        // would be set. No timing bound, so a loaded machine cannot fail it.
        let gate = DispatchSemaphore(value: 0)
        let callEnded = Atomic<Bool>(false)
        let outcome = await executor.run(deadline: .milliseconds(50), {
            _ = gate.wait(timeout: .now() + 60)
            callEnded.store(true, ordering: .releasing)
            return 42
        }, onLate: { value in late.withLock { $0 = value } })
        let endedFirst = callEnded.load(ordering: .acquiring)
        gate.signal()
        guard case .timedOut = outcome else {
            Issue.record("expected timedOut, got \(outcome)")
            return
        }
        #expect(!endedFirst, "the caller waited for the stuck call")
        let deadline = ContinuousClock.now + .seconds(20)
        while late.withLock({ $0 }) == nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(late.withLock { $0 } == 42)

        let quick = await executor.run(deadline: .seconds(5), { 7 })
        guard case .finished(let value) = quick else {
            Issue.record("expected finished, got \(quick)")
            return
        }
        #expect(value == 7)
    }

    @Test("cancelling the waiting task answers cancelled without waiting for the call")
    func cancellation() async throws {
        let executor = IOExecutor(name: "test-io", threads: 1)
        let gate = DispatchSemaphore(value: 0)
        let callStarted = Atomic<Bool>(false)
        let callEnded = Atomic<Bool>(false)
        let task = Task {
            await executor.run(deadline: .seconds(120), {
                callStarted.store(true, ordering: .releasing)
                _ = gate.wait(timeout: .now() + 60)
                callEnded.store(true, ordering: .releasing)
                return 1
            })
        }
        let deadline = ContinuousClock.now + .seconds(20)
        while !callStarted.load(ordering: .acquiring), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        task.cancel()
        let outcome = await task.value
        let endedFirst = callEnded.load(ordering: .acquiring)
        gate.signal()
        guard case .cancelled = outcome else {
            Issue.record("expected cancelled, got \(outcome)")
            return
        }
        #expect(!endedFirst, "the caller waited for the stuck call")
    }
}

/// The once-only continuation behind deadlines and cancellable waits.
@Suite("OneShot")
struct OneShotTests {
    @Test("the first value wins, whether it comes before or after arming")
    func firstValueWins() async {
        let early = OneShot<Int>()
        #expect(early.resolve(1))
        #expect(!early.resolve(2))
        let value = await withCheckedContinuation { early.arm($0) }
        #expect(value == 1)

        let late = OneShot<Int>()
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
            late.arm(continuation)
            #expect(late.resolve(3))
            #expect(!late.resolve(4))
        }
        #expect(result == 3)
    }
}
