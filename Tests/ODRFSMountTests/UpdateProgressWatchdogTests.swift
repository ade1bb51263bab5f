import ODRFSControl
import Testing
@testable import ODRFSMount

/// The bound on an update's fetch phase (issue 26, item 2).
@Suite(.timeLimit(.minutes(1)))
struct UpdateProgressWatchdogTests {
    @Test func noProgressForTheLimitFailsAndCancelsTheWork() async {
        let watchdog = UpdateProgressWatchdog(limit: .milliseconds(400), lowSpeedLimit: .kibibytes(1))
        let started = ContinuousClock.now
        let error = await #expect(throws: ControlError.self) {
            try await watchdog.bound(failure: { _ in ControlError(.originUnreachable, "gave up") }) { () throws(ControlError) in
                // Work that never moves forward, as a fetch waiting on a stalled server.
                do { try await Task.sleep(for: .seconds(30)) } catch { throw ControlError(.cancelled, "cancelled") }
            }
        }
        #expect(error?.message == "gave up")
        let took = ContinuousClock.now - started
        #expect(took >= .milliseconds(400) && took < .seconds(10), "\(took)")
    }

    @Test func workThatKeepsMovingIsNeverCutOff() async throws {
        let watchdog = UpdateProgressWatchdog(limit: .milliseconds(500), lowSpeedLimit: .kibibytes(1))
        try await watchdog.bound(failure: { _ in ControlError(.originUnreachable, "gave up") }) { () throws(ControlError) in
            // Three times the limit in all, progress every 100 ms.
            for _ in 0..<15 {
                try? await Task.sleep(for: .milliseconds(100))
                watchdog.advance()
            }
        }
    }

    @Test func theWorksOwnErrorIsReported() async {
        let watchdog = UpdateProgressWatchdog(limit: .seconds(5), lowSpeedLimit: .kibibytes(1))
        let error = await #expect(throws: ControlError.self) {
            try await watchdog.bound(failure: { _ in ControlError(.originUnreachable, "gave up") }) { () throws(ControlError) in
                throw ControlError(.outOfSpace, "no room")
            }
        }
        #expect(error?.code == .outOfSpace)
    }

    /// A trickle below the low-speed limit is no progress, however often it arrives; bytes
    /// at the limit are, through the tally as through credit.
    @Test func aTrickleIsNoProgressButBytesAtTheLimitAre() async throws {
        let slow = UpdateProgressWatchdog(limit: .milliseconds(600), lowSpeedLimit: .kibibytes(1))
        let error = await #expect(throws: ControlError.self) {
            try await slow.bound(failure: { _ in ControlError(.originUnreachable, "gave up") }) { () throws(ControlError) in
                for _ in 0..<100 {
                    try? await Task.sleep(for: .milliseconds(50))
                    slow.credit(10)   // 200 bytes/s
                }
            }
        }
        #expect(error?.message == "gave up")
        let steady = UpdateProgressWatchdog(limit: .milliseconds(600), lowSpeedLimit: .kibibytes(1))
        try await steady.bound(failure: { _ in ControlError(.originUnreachable, "gave up") }) { () throws(ControlError) in
            for _ in 0..<30 {
                try? await Task.sleep(for: .milliseconds(50))
                steady.tally.add(200)   // 4,000 bytes/s
            }
        }
    }
}
