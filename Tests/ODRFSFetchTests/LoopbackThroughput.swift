import Foundation
import NIOCore
import ODRFSCore
import ODRFSServer
import Testing
import TestSupport
@testable import ODRFSFetch

/// A measurement, not a timed test: runs only with ODRFS_MEASURE=1 and prints the rate of
/// HTTPOrigin downloading a 64 MiB file from the embedded server over loopback.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["ODRFS_MEASURE"] == "1"))
struct LoopbackThroughput {
    @Test(.timeLimit(.minutes(1))) func sixtyFourMebibytes() async throws {
        let size = 64 << 20
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("odrfs-measure-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/packs", withIntermediateDirectories: true)
        try Data("{}\n".utf8).write(to: URL(fileURLWithPath: root + "/manifest.json"))
        try Data(testBytes(size)).write(to: URL(fileURLWithPath: root + "/packs/big.tar"))
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let server = try OriginServer(distDirectory: root, port: 0, logger: LogCapture().logger) { continuation.yield($0) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            defer { group.cancelAll() }
            var iterator = ports.makeAsyncIterator()
            let port = try #require(await iterator.next())
            try await withHTTPOrigin("http://127.0.0.1:\(port)") { origin in
                for _ in 1...3 {
                    var received = 0
                    let start = ContinuousClock.now
                    try await origin.download("packs/big.tar", expectedBytes: ByteCount(Int64(size))) { (chunk: ByteBuffer) throws(FetchError) in
                        received += chunk.readableBytes
                    }
                    let elapsed = ContinuousClock.now - start
                    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                    print("HTTPOrigin loopback: \(received) bytes in \(elapsed): \(Int(Double(received) / seconds / 1e6)) MB/s")
                    #expect(received == size)
                }
            }
        }
    }
}
