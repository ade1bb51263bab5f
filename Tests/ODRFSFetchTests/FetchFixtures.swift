import FaultOriginSupport
import Foundation
import NIOCore
import Logging
import ODRFSCore
import ODRFSFetch
import TestSupport

/// Runs `body` against a fresh fault-injecting origin and always stops it.
func withFaultOrigin(_ body: (FaultOrigin) async throws -> Void) async throws {
    let origin = try await FaultOrigin.start()
    do {
        try await body(origin)
    } catch {
        await origin.stop()
        throw error
    }
    await origin.stop()
}

/// Runs `body` with an `HTTPOrigin` and always shuts its client down. The default deadline
/// is generous: these tests share the process (and its two cooperative threads) with mount
/// tests that block, and only the tests of the deadline itself want it short.
func withHTTPOrigin(
    _ url: String,
    options: OriginOptions = OriginOptions(fetchDeadline: .seconds(20)),
    log: LogCapture = LogCapture(),
    _ body: (HTTPOrigin) async throws -> Void
) async throws {
    let origin = try HTTPOrigin(url: url, options: options, logger: log.logger)
    do {
        try await body(origin)
    } catch {
        await origin.shutdown()
        throw error
    }
    await origin.shutdown()
}

extension HTTPOrigin {
    /// Downloads `path` into memory, as the pack downloader would stream it to disk.
    func bytes(of path: String, expected: Int) async throws(FetchError) -> [UInt8] {
        var result: [UInt8] = []
        try await download(path, expectedBytes: ByteCount(Int64(expected))) { (chunk: ByteBuffer) throws(FetchError) in
            result.append(contentsOf: chunk.readableBytesView)
        }
        return result
    }
}

/// Deterministic, non-repeating-looking test bytes.
func testBytes(_ count: Int, seed: UInt64 = 1) -> [UInt8] {
    var state = seed &* 0x9E37_79B9_7F4A_7C15
    // Filled in place, not with `map`: several times faster in a debug build, and this
    // runs on a thread of the cooperative pool that parallel async tests share.
    return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
        for index in 0..<count {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            buffer[index] = UInt8(truncatingIfNeeded: state >> 33)
        }
        initialized = count
    }
}

/// A TCP port on 127.0.0.1 that refuses connections for as long as this value lives: bound
/// but never listening, so no server of a test running in parallel can take it (a port
/// bound once and released could be handed to one, which then answered 404).
final class RefusingPort: Sendable {
    let port: Int
    private let descriptor: Int32

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let result = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 ? getsockname(fd, pointer, &length) : -1
            }
        }
        guard result == 0 else {
            close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        descriptor = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit {
        close(descriptor)
    }
}

/// Writes a temporary file and returns its path.
func temporaryFile(_ text: String) throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("odrfs-\(UUID().uuidString)").path
    try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    return path
}
