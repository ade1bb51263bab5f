import FaultOriginSupport
import Foundation
import ODRFSCore
import ODRFSServer
import ODRFSStore
import Testing
import TestSupport
@testable import ODRFSFetch

/// Through `PackDownloader`: what the origin delivers is verified before it is published.
@Suite(.timeLimit(.minutes(1)))
struct PackDownloaderHTTPTests {
    static func descriptor(for bytes: [UInt8]) -> PackDescriptor {
        var hasher = ChunkHasher(chunkSize: .kibibytes(64))
        hasher.update(bytes)
        let digests = hasher.finalize()
        return PackDescriptor(id: PackID("Level1"), tags: [Tag("Level1")], file: "packs/\(digests.sha256.hex).tar",
                              bytes: digests.bytes, sha256: digests.sha256, chunks: digests.chunks, files: 1)
    }

    static func withStore(_ body: (PackStore) async throws -> Void) async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("odrfs-store-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        try await body(try PackStore(root: root, logger: LogCapture().logger))
    }

    @Test func wrongBytesAreNeverPublished() async throws {
        let good = testBytes(300_000, seed: 1)
        var bad = good
        bad[250_000] ^= 0xFF
        let pack = Self.descriptor(for: good)
        try await withFaultOrigin { server in
            server.setFile("/" + pack.file, bad)
            try await Self.withStore { store in
                try await withHTTPOrigin(server.baseURL) { origin in
                    let downloader = PackDownloader(origin: origin, store: store, chunkSize: .kibibytes(64), logger: LogCapture().logger)
                    let error = await #expect(throws: FetchError.self) { try await downloader.fetch(pack) }
                    #expect(error?.kind == .corrupt)
                    #expect(!store.contains(pack))
                    #expect(!FileManager.default.fileExists(atPath: store.layout.path(of: pack)))
                    #expect(server.requests(of: "/" + pack.file).count == 1, "a hash mismatch is not retried")

                    server.setFile("/" + pack.file, good)
                    server.script("/" + pack.file, [.reset(after: 70_000)])
                    try await downloader.fetch(pack)
                    #expect(store.contains(pack))
                    #expect(try Array(Data(contentsOf: URL(fileURLWithPath: store.layout.path(of: pack)))) == good)
                }
            }
        }
    }

    @Test func endToEndThroughTheEmbeddedServerWithAToken() async throws {
        let bytes = testBytes(3 << 20, seed: 7)
        let pack = Self.descriptor(for: bytes)
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("odrfs-e2e-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/dist/packs", withIntermediateDirectories: true)
        try Data("{}\n".utf8).write(to: URL(fileURLWithPath: root + "/dist/manifest.json"))
        try Data(bytes).write(to: URL(fileURLWithPath: root + "/dist/" + pack.file))
        try Data("e2e-token\n".utf8).write(to: URL(fileURLWithPath: root + "/token"))
        let serverLog = LogCapture()
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let server = try OriginServer(distDirectory: root + "/dist", port: 0, tokenFile: root + "/token",
                                      logger: serverLog.logger) { continuation.yield($0) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            defer { group.cancelAll() }
            var iterator = ports.makeAsyncIterator()
            let port = try #require(await iterator.next())
            try await Self.withStore { store in
                let options = OriginOptions(tokenFile: root + "/token", fetchDeadline: .seconds(20))
                try await withHTTPOrigin("http://127.0.0.1:\(port)", options: options) { origin in
                    let downloader = PackDownloader(origin: origin, store: store, chunkSize: .kibibytes(64), logger: LogCapture().logger)
                    try await downloader.fetch(pack)
                    #expect(store.contains(pack))
                }
                try await withHTTPOrigin("http://127.0.0.1:\(port)") { origin in
                    let error = await #expect(throws: FetchError.self) {
                        _ = try await origin.data(at: "manifest.json", limit: .kibibytes(1))
                    }
                    #expect(error?.kind == .unauthorized)
                }
            }
        }
        #expect(serverLog.records.contains { $0.metadata["http.status"] == "200" && $0.metadata["http.bytes"] == String(bytes.count) })
    }
}
