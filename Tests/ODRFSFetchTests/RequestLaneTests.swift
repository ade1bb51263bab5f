import FaultOriginSupport
import Foundation
import NIOCore
import ODRFSCore
import Testing
import TestSupport
@testable import ODRFSFetch

/// Ranges a reader waits for (``RequestLane/reader``) go on connections of their own: a
/// pool whose every connection holds a pack's stream does not make them wait.
@Suite(.timeLimit(.minutes(1)))
struct RequestLaneTests {
    static let path = "/packs/p.tar"

    /// Fetches `range` of the file in the given lane; nil if it failed.
    static func range(_ range: Range<Int64>, of origin: HTTPOrigin, fileBytes: Int, lane: RequestLane) async -> [UInt8]? {
        await RequestLane.$current.withValue(lane) {
            var bytes: [UInt8] = []
            do throws(FetchError) {
                try await origin.download("packs/p.tar", ranges: [range], fileBytes: ByteCount(Int64(fileBytes))) { (_: Int64, chunk: ByteBuffer) throws(FetchError) in
                    bytes.append(contentsOf: chunk.readableBytesView)
                }
                return bytes
            } catch {
                return nil
            }
        }
    }

    @Test func aReadersRangeDoesNotWaitForTheStreamsConnection() async throws {
        let file = testBytes(2 << 20, seed: 27)
        try await withFaultOrigin { server in
            server.setFile(Self.path, file)
            let gate = FaultGate()
            defer { gate.open() }
            server.script(Self.path, [.pause(after: 1000, gate: gate)])
            // One connection in the main pool, held by the stream.
            let options = OriginOptions(fetchDeadline: .seconds(20), maxConnections: 1)
            try await withHTTPOrigin(server.baseURL, options: options) { origin in
                let stream = Task { try? await origin.bytes(of: "packs/p.tar", expected: file.count) }
                #expect(await ChunkReleaseTests.eventually(.seconds(10)) { server.requests(of: Self.path).count == 1 })
                let wanted: Range<Int64> = 1_900_000..<1_965_536
                let expected = Array(file[Int(wanted.lowerBound)..<Int(wanted.upperBound)])
                // The main pool's one connection is busy: a range there waits for the stream.
                let bulk = await finishes(within: .seconds(1)) { await Self.range(wanted, of: origin, fileBytes: file.count, lane: .bulk) }
                #expect(bulk == nil, "a range in the main pool did not wait for its only connection")
                // A reader's range goes on a connection of its own, at once.
                let reader = await finishes(within: .seconds(5)) { await Self.range(wanted, of: origin, fileBytes: file.count, lane: .reader) }
                #expect(reader.map { $0 == expected } == true, "a reader's range waited for the stream's connection (or came back wrong)")
                #expect(server.connections >= 2)
                gate.open()
                #expect(await stream.value.map { $0 == file } == true)
            }
        }
    }
}
