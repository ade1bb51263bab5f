import FaultOriginSupport
import Foundation
import NIOCore
import ODRFSCore
import ODRFSServer
import Testing
import TestSupport
@testable import ODRFSFetch

/// `Origin.download(_:ranges:fileBytes:into:)`: several ranges of a file in one request
/// (`multipart/byteranges`), against `odrfs serve` itself and against servers that do not
/// do multi-range, lie, or break off.
@Suite(.timeLimit(.minutes(1)))
struct MultiRangeFetchTests {
    static let file = testBytes(300_000, seed: 7)
    static let ranges: [Range<Int64>] = [250_000..<260_000, 10..<1_000, 100_000..<100_001]

    /// Offset → byte of everything a multi-range download handed on; a byte twice is an issue.
    final class Received: Sendable {
        let bytes = LockedValue<[Int64: UInt8]>([:])

        func take(_ offset: Int64, _ chunk: ByteBuffer) {
            bytes.withLock { bytes in
                for (index, byte) in chunk.readableBytesView.enumerated() {
                    #expect(bytes.updateValue(byte, forKey: offset + Int64(index)) == nil, "byte \(offset + Int64(index)) twice")
                }
            }
        }

        func expect(_ ranges: [Range<Int64>], of file: [UInt8]) {
            let got = bytes.withLock { $0 }
            #expect(got.count == ranges.reduce(0) { $0 + $1.count })
            for range in ranges {
                #expect(range.allSatisfy { got[$0] == file[Int($0)] }, "range \(range)")
            }
        }
    }

    static func fetch(_ origin: any Origin, _ path: String, ranges: [Range<Int64>] = ranges) async throws -> Received {
        let received = Received()
        try await origin.download(path, ranges: ranges, fileBytes: ByteCount(Int64(file.count))) { (offset: Int64, chunk: ByteBuffer) async throws(FetchError) in
            received.take(offset, chunk)
        }
        return received
    }

    @Test func threeRangesFromOdrfsServeInExactlyOneRequest() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("odrfs-multirange-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/dist/packs", withIntermediateDirectories: true)
        try Data("{}\n".utf8).write(to: URL(fileURLWithPath: root + "/dist/manifest.json"))
        try Data(Self.file).write(to: URL(fileURLWithPath: root + "/dist/packs/p.tar"))
        let serverLog = LogCapture()
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let server = try OriginServer(distDirectory: root + "/dist", port: 0, logger: serverLog.logger) { continuation.yield($0) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            defer { group.cancelAll() }
            var iterator = ports.makeAsyncIterator()
            let port = try #require(await iterator.next())
            try await withHTTPOrigin("http://127.0.0.1:\(port)") { origin in
                let received = try await Self.fetch(origin, "packs/p.tar")
                received.expect(Self.ranges, of: Self.file)
                let requests = serverLog.records.filter { $0.message == "request" && $0.metadata["http.path"] == "/packs/p.tar" }
                #expect(requests.count == 1, "\(requests.map(\.metadata))")
                #expect(requests.first?.metadata["http.status"] == "206")
                #expect(requests.first?.metadata["http.range"] == "bytes=10-999,100000-100000,250000-259999")
                #expect(!origin.ignoresMultipleRanges.withLock { $0 })
                // A part longer than the server's 256 KiB reads, and one at the very end of the file.
                let long: [Range<Int64>] = [1..<280_000, 299_990..<300_000]
                let again = try await Self.fetch(origin, "packs/p.tar", ranges: long)
                again.expect(long, of: Self.file)
            }
        }
    }

    @Test func aServerThatAnswersTheWholeFileStillGivesTheRightBytesAndIsRemembered() async throws {
        try await withFaultOrigin { server in
            server.setFile("/p.tar", Self.file)
            server.script("/p.tar", [.serveIgnoringRange])
            try await withHTTPOrigin(server.baseURL) { origin in
                let first = try await Self.fetch(origin, "p.tar")
                first.expect(Self.ranges, of: Self.file)
                #expect(server.requests(of: "/p.tar").count == 1)
                #expect(origin.ignoresMultipleRanges.withLock { $0 })
                // Later calls do not ask for several ranges again: one range request each.
                let second = try await Self.fetch(origin, "p.tar")
                second.expect(Self.ranges, of: Self.file)
                #expect(server.requests(of: "/p.tar").dropFirst().map(\.range) == ["bytes=10-999", "bytes=100000-100000", "bytes=250000-259999"])
            }
        }
    }

    @Test func aWholeFileAnswerIsDroppedWhenReadingThroughWouldCostMoreThanAskingAgain() async throws {
        // Two small ranges, one at the start and one near the end of a 24 MiB file: a
        // server that answers 200 would make the client read 24 MiB for 8 KiB.
        let big = testBytes(24 << 20, seed: 9)
        let ranges: [Range<Int64>] = [100..<4_196, Int64(big.count - 5_000)..<Int64(big.count - 904)]
        try await withFaultOrigin { server in
            server.setFile("/big.tar", big)
            server.script("/big.tar", [.serveIgnoringRange])
            try await withHTTPOrigin(server.baseURL) { origin in
                let received = Received()
                try await origin.download("big.tar", ranges: ranges, fileBytes: ByteCount(Int64(big.count))) { (offset: Int64, chunk: ByteBuffer) async throws(FetchError) in
                    received.take(offset, chunk)
                }
                received.expect(ranges, of: big)
                #expect(origin.ignoresMultipleRanges.withLock { $0 })
                // The whole-file answer was dropped, not read through to its end (which
                // would have delivered both ranges): one range request each followed.
                #expect(server.requests(of: "/big.tar").dropFirst().map(\.range) == ["bytes=100-4195", "bytes=25160824-25164919"])
            }
        }
    }

    @Test func aMultipartAnswerFromTheFaultOriginIsOneRequest() async throws {
        try await withFaultOrigin { server in
            server.setFile("/p.tar", Self.file)
            try await withHTTPOrigin(server.baseURL) { origin in
                let received = try await Self.fetch(origin, "p.tar")
                received.expect(Self.ranges, of: Self.file)
                #expect(server.requests(of: "/p.tar").map(\.range) == ["bytes=10-999,100000-100000,250000-259999"])
                #expect(server.bytesSent(of: "/p.tar") == 10_991)
            }
        }
    }

    @Test func aBodyCutOffMidwayIsResumedWithWhatIsMissingOnly() async throws {
        try await withFaultOrigin { server in
            server.setFile("/p.tar", Self.file)
            // Past the first part (990 bytes plus framing) and into the third.
            server.script("/p.tar", [.truncate(after: 1_300)])
            try await withHTTPOrigin(server.baseURL) { origin in
                let received = try await Self.fetch(origin, "p.tar")
                received.expect(Self.ranges, of: Self.file)
                let asked = server.requests(of: "/p.tar").map(\.range)
                #expect(asked.count == 2)
                let retry = try #require(asked.last ?? nil)
                #expect(!retry.contains("10-999"), "the retry asked again for a range already received: \(retry)")
                #expect(retry.hasSuffix("-259999"))
            }
        }
    }

    static let hostileBodies: [(String, String, [UInt8])] = [
        ("garbage", "multipart/byteranges; boundary=X", Array("not a multipart body at all\r\n".utf8) + [UInt8](repeating: 0x41, count: 5000)),
        ("unrequested part", "multipart/byteranges; boundary=X", Array("\r\n--X\r\nContent-Range: bytes 0-9/300000\r\n\r\n0123456789\r\n--X--\r\n".utf8)),
        ("part past the file", "multipart/byteranges; boundary=X", Array("\r\n--X\r\nContent-Range: bytes 10-999999/*\r\n\r\n".utf8)),
        ("no boundary, no Content-Range", "multipart/byteranges", Array("x".utf8)),
    ]

    @Test(arguments: hostileBodies.indices)
    func aMalformedMultipartBodyIsAnErrorNotATrap(index: Int) async throws {
        let (name, type, body) = Self.hostileBodies[index]
        try await withFaultOrigin { server in
            server.setFile("/p.tar", Self.file)
            server.script("/p.tar", [.rawPartial(contentType: type, body: body)])
            try await withHTTPOrigin(server.baseURL) { origin in
                let error = await #expect(throws: FetchError.self, "\(name)") { _ = try await Self.fetch(origin, "p.tar") }
                #expect(error?.kind == .corrupt, "\(name): \(error?.message ?? "")")
                #expect(server.requests(of: "/p.tar").count == 1, "\(name): a corrupt answer is not retried")
            }
        }
    }

    @Test func throughAMirrorSetTheNextServerGetsOnlyTheRest() async throws {
        try await withFaultOrigin { main in
            try await withFaultOrigin { mirror in
                main.setFile("/p.tar", Self.file)
                mirror.setFile("/p.tar", Self.file)
                // The main server breaks off in the third part, then loses the file: the set moves on.
                main.script("/p.tar", [.truncate(after: 1_300), .status(404)])
                let log = LogCapture()
                let set = MirrorSet([try HTTPOrigin(url: main.baseURL, logger: log.logger),
                                     try HTTPOrigin(url: mirror.baseURL, logger: log.logger)], logger: log.logger)
                do {
                    let received = try await Self.fetch(set, "p.tar")
                    received.expect(Self.ranges, of: Self.file)
                    let asked = mirror.requests(of: "/p.tar").map(\.range)
                    #expect(asked.count == 1, "\(asked)")
                    let rest = try #require(asked.first ?? nil)
                    #expect(!rest.contains("10-999") && !rest.contains("100000-100000") && rest.hasSuffix("-259999"), "\(rest)")
                } catch {
                    await set.shutdown()
                    throw error
                }
                await set.shutdown()
            }
        }
    }

    @Test func aLocalDistDirReadsTheFileOnce() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("odrfs-multirange-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try Data(Self.file).write(to: URL(fileURLWithPath: root + "/p.tar"))
        let received = try await Self.fetch(try FileOrigin(root: root), "p.tar")
        received.expect(Self.ranges, of: Self.file)
    }
}
