import FaultOriginSupport
import Foundation
import Logging
import ODRFSCore
import Testing
import TestSupport
@testable import ODRFSFetch

/// Nobody there fails fast; somebody there but slow gets the whole fetch deadline; every
/// answer and every failure to connect lands in the origin's health record.
@Suite(.timingSensitive, .timeLimit(.minutes(1)))
struct HTTPOriginFailFastTests {
    @Test func refusedOriginFailsWithinFiveSecondsDespiteALongDeadline() async throws {
        let refusing = try RefusingPort()
        let port = refusing.port
        defer { withExtendedLifetime(refusing) {} }
        let log = LogCapture()
        let start = ContinuousClock.now
        try await withHTTPOrigin("http://127.0.0.1:\(port)/dist", options: OriginOptions(fetchDeadline: .seconds(30)), log: log) { origin in
            let error = await #expect(throws: FetchError.self) {
                _ = try await origin.bytes(of: "packs/p.tar", expected: 10)
            }
            #expect(error?.kind == .unreachable)
            #expect(error?.message.contains("refused") == true, "\(error?.message ?? "")")
            let health = origin.healthRecord.snapshot
            #expect(health.isReachable == false)
            #expect(health.error?.contains("refused") == true)
            #expect(!origin.isOnline)
        }
        let elapsed = ContinuousClock.now - start
        // Half the 30 s deadline: a refused origin must not wait it out. The budget itself is
        // 2.5 s (`unreachableAfter`); the margin is for a loaded machine, not for the design.
        #expect(elapsed >= .seconds(2) && elapsed < .seconds(15), "took \(elapsed)")
        // The retries are debug lines; the caller logs the one failure.
        #expect(!log.records.contains { $0.level >= .info }, "\(log.records.map(\.text))")
    }

    /// Regression: bytes re-sent by a server that ignores Range (and are skipped) are not
    /// progress, or a server that stalls at the same place each time kept the fetch alive forever.
    @Test func serverStallingAgainInTheResentPartFailsAfterTheDeadline() async throws {
        try await withFaultOrigin { server in
            let file = testBytes(200_000)
            server.setFile("/packs/p.tar", file)
            // The first attempt ends at once with 20 KB received, so a resumed request always
            // follows; every later one re-sends from byte 0 and stalls inside those 20 KB.
            server.script("/packs/p.tar", [.reset(after: 20_000)] + Array(repeating: .stallIgnoringRange(after: 10_000), count: 200))
            let start = ContinuousClock.now
            // 5 s: a loaded machine's retry after the reset needs more than 2 s at times.
            try await withHTTPOrigin(server.baseURL, options: OriginOptions(fetchDeadline: .seconds(5))) { origin in
                let error = await #expect(throws: FetchError.self) {
                    _ = try await origin.bytes(of: "packs/p.tar", expected: file.count)
                }
                #expect(error?.kind == .unreachable)
            }
            let elapsed = ContinuousClock.now - start
            #expect(elapsed < .seconds(25), "took \(elapsed)")
            #expect(server.requests(of: "/packs/p.tar").count >= 2, "it never resumed")
        }
    }

    @Test func unreachableThenAnswerMarksTheOriginOnlineWithItsRoundTrip() async throws {
        try await withFaultOrigin { server in
            let file = testBytes(50_000)
            server.setFile("/packs/p.tar", file)
            try await withHTTPOrigin(server.baseURL) { origin in
                origin.healthRecord.recordUnreachable("test")
                #expect(!origin.isOnline)
                let bytes = try await origin.bytes(of: "packs/p.tar", expected: file.count)
                #expect(bytes == file)
                let health = origin.healthRecord.snapshot
                #expect(health.isReachable == true && health.httpStatus == 200 && health.error == nil)
                #expect(health.roundTrip != nil && health.lastContact != nil)
                #expect(origin.isOnline)
            }
        }
    }

    @Test func offlineOriginFailsAtOnce() async throws {
        let origin = OfflineOrigin(displayName: "http://example.invalid/dist", lastContact: Date(timeIntervalSince1970: 1_000))
        let start = ContinuousClock.now
        let error = await #expect(throws: FetchError.self) {
            _ = try await origin.data(at: "manifest.json", limit: ByteCount(100))
        }
        #expect(error?.kind == .unreachable)
        #expect(error?.message.contains("--offline") == true)
        #expect(ContinuousClock.now - start < .milliseconds(100))
        #expect(!origin.isOnline)
        #expect(origin.health.first?.snapshot.lastContact == Date(timeIntervalSince1970: 1_000))
    }
}
