import Foundation
import Logging
import ODRFSServer
import TestSupport

/// A temporary dist dir with a manifest, a 1000-byte pack, a hidden file and symlinks that
/// point outside, plus a token file beside it (outside the dist dir).
struct TestDist {
    let root: String
    let dist: String
    let tokenFile: String
    static let token = "s3cr3t-t0ken-value"
    static let pack = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
    static let packPath = "/packs/0123.tar"

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("odrfs-server-\(UUID().uuidString)").path
        dist = root + "/dist"
        tokenFile = root + "/token"
        let files = FileManager.default
        try files.createDirectory(atPath: dist + "/packs", withIntermediateDirectories: true)
        try Data("{\"format\":1}\n".utf8).write(to: URL(fileURLWithPath: dist + "/manifest.json"))
        try Data(Self.pack).write(to: URL(fileURLWithPath: dist + Self.packPath))
        try Data("hidden\n".utf8).write(to: URL(fileURLWithPath: dist + "/.hidden"))
        try Data("outside\n".utf8).write(to: URL(fileURLWithPath: root + "/outside.txt"))
        try files.createSymbolicLink(atPath: dist + "/packs/escape.tar", withDestinationPath: root + "/outside.txt")
        try files.createSymbolicLink(atPath: dist + "/etc", withDestinationPath: "/etc")
        try Data("\(Self.token)\nsecond line is ignored\n".utf8).write(to: URL(fileURLWithPath: tokenFile))
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: root)
    }
}

struct ServerDidNotStart: Error {}

/// Runs an `OriginServer` on 127.0.0.1, port 0, for the duration of `body`, and always
/// stops it (task cancellation) and removes the dist dir afterwards.
func withOriginServer(
    token: Bool = false,
    limits: ConnectionLimits = ConnectionLimits(),
    _ body: (_ port: Int, _ dist: TestDist, _ log: LogCapture) async throws -> Void
) async throws {
    let dist = try TestDist()
    defer { dist.remove() }
    let log = LogCapture()
    let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
    let server = try OriginServer(distDirectory: dist.dist, host: "127.0.0.1", port: 0,
                                  tokenFile: token ? dist.tokenFile : nil, limits: limits,
                                  logger: log.logger) { port in
        continuation.yield(port)
        continuation.finish()
    }
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await server.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw ServerDidNotStart() }
        do {
            try await body(port, dist, log)
        } catch {
            group.cancelAll()
            throw error
        }
        group.cancelAll()
    }
}
