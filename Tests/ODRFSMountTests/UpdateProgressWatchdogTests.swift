import Foundation
import Synchronization
import Testing
@testable import ODRFSMount

/// The bound on an update's fetch phase (issue 26, item 2).
@Suite(.timingSensitive, .timeLimit(.minutes(1)))
struct UpdateProgressWatchdogTests {
    @Test func noProgressForTheLimitFailsAndCancelsTheWork() async {
        let watchdog = UpdateProgressWatchdog(limit: .milliseconds(400), lowSpeedLimit: .kibibytes(1))
        let started = ContinuousClock.now
        let error = await #expect(throws: UpdateError.self) {
            try await watchdog.bound(failure: { _ in UpdateError(.originUnreachable, "gave up") }) { () throws(UpdateError) in
                // Work that never moves forward, as a fetch waiting on a stalled server.
                do { try await Task.sleep(for: .seconds(120)) } catch { throw UpdateError(.cancelled, "cancelled") }
            }
        }
        #expect(error?.message == "gave up")
        // Long before the work's own end (and the suite's one-minute limit): `swift test` on two
        // cores has starved the cooperative pool for over 10 s, so "at once" is not measurable.
        let took = ContinuousClock.now - started
        #expect(took >= .milliseconds(400) && took < .seconds(45), "\(took)")
    }

    @Test func workThatKeepsMovingIsNeverCutOff() async throws {
        // Progress every 100 ms (a pack done each time), for longer than the limit in all.
        // The progress comes from a thread of its own, as fetch callbacks do, started before
        // the watch and kept going until the watch returns: CI runs have starved the
        // cooperative pool for over 10 s, and a watch waking late must still find the
        // progress a real fetch would have made meanwhile.
        final class Progress: Sendable {
            let sixSeconds = Atomic<Bool>(false)
            let stop = Atomic<Bool>(false)
        }
        let watchdog = UpdateProgressWatchdog(limit: .seconds(5), lowSpeedLimit: .kibibytes(1))
        let progress = Progress()
        let thread = Thread {
            let started = ContinuousClock.now
            while !progress.stop.load(ordering: .acquiring) {
                Thread.sleep(forTimeInterval: 0.1)
                watchdog.advance()
                if ContinuousClock.now - started >= .seconds(6) { progress.sixSeconds.store(true, ordering: .releasing) }
            }
        }
        thread.start()
        defer { progress.stop.store(true, ordering: .releasing) }
        try await watchdog.bound(failure: { _ in UpdateError(.originUnreachable, "gave up") }) { () throws(UpdateError) in
            while !progress.sixSeconds.load(ordering: .acquiring) {
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    @Test func theWorksOwnErrorIsReported() async {
        let watchdog = UpdateProgressWatchdog(limit: .seconds(5), lowSpeedLimit: .kibibytes(1))
        let error = await #expect(throws: UpdateError.self) {
            try await watchdog.bound(failure: { _ in UpdateError(.originUnreachable, "gave up") }) { () throws(UpdateError) in
                throw UpdateError(.resourceUnavailable, "no room")
            }
        }
        #expect(error?.kind == .resourceUnavailable)
    }

    /// A trickle below the low-speed limit is no progress, however often it arrives; bytes
    /// at the limit are, through the tally as through credit.
    @Test func aTrickleIsNoProgressButBytesAtTheLimitAre() async throws {
        let slow = UpdateProgressWatchdog(limit: .seconds(1), lowSpeedLimit: .kibibytes(1))
        let error = await #expect(throws: UpdateError.self) {
            try await slow.bound(failure: { _ in UpdateError(.originUnreachable, "gave up") }) { () throws(UpdateError) in
                for _ in 0..<400 {
                    try? await Task.sleep(for: .milliseconds(50))
                    slow.credit(10)   // 200 bytes/s at most: 10 ms of credit per step
                }
            }
        }
        #expect(error?.message == "gave up")
        // 10 KB per step is 10 s of credit at 1 KiB/s: never behind, however late the steps
        // (the first comes before any sleep: a loaded machine may wake the loop late).
        let steady = UpdateProgressWatchdog(limit: .seconds(3), lowSpeedLimit: .kibibytes(1))
        let started = ContinuousClock.now
        try await steady.bound(failure: { _ in UpdateError(.originUnreachable, "gave up") }) { () throws(UpdateError) in
            while ContinuousClock.now - started < .seconds(4) {
                steady.tally.add(10_000)
                try? await Task.sleep(for: .milliseconds(50))
            }
        }
    }
}

