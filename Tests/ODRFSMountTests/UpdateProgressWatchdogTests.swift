import Foundation
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
                do { try await Task.sleep(for: .seconds(30)) } catch { throw UpdateError(.cancelled, "cancelled") }
            }
        }
        #expect(error?.message == "gave up")
        let took = ContinuousClock.now - started
        #expect(took >= .milliseconds(400) && took < .seconds(10), "\(took)")
    }

    @Test func workThatKeepsMovingIsNeverCutOff() async throws {
        // Progress every 100 ms (a pack done each time), for longer than the limit in all.
        // The progress comes from a thread of its own, as fetch callbacks do: a CI run once
        // starved the cooperative pool for over 5 s, so a task advancing between sleeps
        // stood still while the watch, waking late, saw the whole stall as idle time.
        let watchdog = UpdateProgressWatchdog(limit: .seconds(5), lowSpeedLimit: .kibibytes(1))
        try await watchdog.bound(failure: { _ in UpdateError(.originUnreachable, "gave up") }) { () throws(UpdateError) in
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                let progress = Thread {
                    let started = ContinuousClock.now
                    while ContinuousClock.now - started < .seconds(6) {
                        Thread.sleep(forTimeInterval: 0.1)
                        watchdog.advance()
                    }
                    done.resume()
                }
                progress.start()
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

