import FaultOriginSupport
import Foundation
import ODRFSCore
import Testing
import ODRFSStore
import TestSupport
@testable import ODRFSFetch

/// Lying origins that used to crash the daemon or make it talk to something other than an
/// HTTP server (issue 12, defects 2 and 9).
@Suite(.timeLimit(.minutes(1)))
struct HostileOriginTests {
    let path = "/packs/p.tar"
    let file = testBytes(5000)

    @Test func unrequestedHugeContentRangeIsCorruptNotATrap() async throws {
        try await withFaultOrigin { server in
            server.setFile(path, file)
            server.script(path, [.partialContent(contentRange: "bytes 0-9223372036854775807/*")])
            try await withHTTPOrigin(server.baseURL) { origin in
                let error = await #expect(throws: FetchError.self) {
                    _ = try await origin.bytes(of: "packs/p.tar", expected: file.count)
                }
                #expect(error?.kind == .corrupt, "\(String(describing: error))")
            }
        }
    }

    @Test func contentRangeBeyondTheFileIsCorrupt() async throws {
        try await withFaultOrigin { server in
            server.setFile(path, file)
            server.script(path, [.partialContent(contentRange: "bytes 0-5000/*")])
            try await withHTTPOrigin(server.baseURL) { origin in
                let error = await #expect(throws: FetchError.self) {
                    _ = try await origin.bytes(of: "packs/p.tar", expected: file.count)
                }
                #expect(error?.kind == .corrupt)
            }
        }
    }

    @Test func retryAfterFarInTheFutureIsClamped() {
        let now = Date(timeIntervalSince1970: 784_111_777)
        let cap = Duration.seconds(RetryAfter.maximumSeconds)
        #expect(RetryAfter.delay(from: "Fri, 31 Dec 9999 23:59:59 GMT", now: now) == cap)
        // A clock far in the past used to overflow Int64 milliseconds.
        #expect(RetryAfter.delay(from: "Fri, 31 Dec 9999 23:59:59 GMT", now: Date(timeIntervalSince1970: -1e300)) == cap)
        #expect(RetryAfter.delay(from: "Sun, 06 Nov -2147483648 08:49:37 GMT", now: now) == nil)
        #expect(RetryAfter.delay(from: "99999999999999999999", now: now) == cap)
        #expect(RetryAfter.delay(from: "120", now: now) == .seconds(120))
    }

    @Test func redirectPolicyAllowsOnlyHTTPAndHTTPS() throws {
        let from = "http://origin.example/dist/packs/p.tar"
        #expect(try HTTPOrigin.redirectTarget("/mirror/p.tar", from: from, shown: "p") == "http://origin.example/mirror/p.tar")
        #expect(try HTTPOrigin.redirectTarget("https://cdn.example/p.tar", from: from, shown: "p") == "https://cdn.example/p.tar")
        for location in ["http+unix://%2Ftmp%2Fsock/p.tar", "https+unix://%2Ftmp%2Fsock/p.tar", "file:///etc/passwd",
                         "ftp://example/p.tar", "unix:///tmp/sock", "http:///p.tar"] {
            #expect(throws: AttemptFailure.self, "\(location)") { try HTTPOrigin.redirectTarget(location, from: from, shown: "p") }
        }
    }

    /// The origin redirects to a Unix socket that listens: the fetch must fail at once and
    /// nothing may connect to the socket.
    @Test func redirectToAUnixSocketIsRefused() async throws {
        let socketPath = "/tmp/odrfs-redirect-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        let listener = try UnixListener(path: socketPath)
        defer { listener.close() }
        let encoded = socketPath.replacingOccurrences(of: "/", with: "%2F")
        try await withFaultOrigin { server in
            server.setFile(path, file)
            server.script(path, [.redirect("http+unix://\(encoded)/packs/p.tar")])
            try await withHTTPOrigin(server.baseURL, options: OriginOptions(fetchDeadline: .seconds(2))) { origin in
                let error = await #expect(throws: FetchError.self) {
                    _ = try await origin.bytes(of: "packs/p.tar", expected: file.count)
                }
                #expect(error?.message.contains("only http and https") == true, "\(String(describing: error))")
            }
        }
        #expect(!listener.hasPendingConnection(), "the fetcher connected to the Unix socket")
    }
}

/// A listening Unix socket that never accepts; tells whether a client connected.
private struct UnixListener {
    let fd: Int32
    let path: String

    init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (i, byte) in path.utf8.prefix(buffer.count - 1).enumerated() { buffer[i] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard fd >= 0, bound == 0, listen(fd, 8) == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: ["path": path, "errno": errno])
        }
    }

    func hasPendingConnection() -> Bool {
        let client = accept(fd, nil, nil)
        if client >= 0 { Glibc.close(client) }
        return client >= 0
    }

    func close() {
        Glibc.close(fd)
        unlink(path)
    }
}

/// The index download is bounded (issue 12, defect 5).
@Suite(.timeLimit(.minutes(1)))
struct IndexDownloadLimitTests {
    @Test func oversizedIndexIsRefusedBeforeAnyRequest() async throws {
        let cache = try TemporaryDirectory()
        let store = try PackStore(root: cache.path, logger: LogCapture().logger)
        try await withFaultOrigin { server in
            let declared = BundleLimits.maxIndexBytes + ByteCount(1)
            server.setFile("/index/big.odrx", testBytes(100))
            try await withHTTPOrigin(server.baseURL) { origin in
                let downloader = PackDownloader(origin: origin, store: store, chunkSize: .kibibytes(64), logger: LogCapture().logger)
                let reference = IndexReference(file: "index/big.odrx", bytes: declared, sha256: ContentHash.of([]), entries: 1)
                let error = await #expect(throws: FetchError.self) { try await downloader.fetch(reference) }
                #expect(error?.message.contains("limit") == true, "\(String(describing: error))")
            }
            #expect(server.requests(of: "/index/big.odrx").isEmpty)
        }
    }
}
