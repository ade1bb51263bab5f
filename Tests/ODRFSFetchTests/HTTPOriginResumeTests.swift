import FaultOriginSupport
import Foundation
import ODRFSCore
import Testing
@testable import ODRFSFetch

/// Interrupted bodies resume with a Range request and `consume` still sees every byte once.
@Suite(.timeLimit(.minutes(1)))
struct HTTPOriginResumeTests {
    let path = "/packs/big.tar"
    let file = testBytes(1 << 20)

    /// N of "bytes=N-". The exact N depends on how many bytes the client had consumed when
    /// the connection died: AsyncHTTPClient drops what it buffered but had not handed out yet.
    static func offset(_ range: String?) -> Int? {
        guard let range, range.hasPrefix("bytes="), range.hasSuffix("-") else { return nil }
        return Int(range.dropFirst(6).dropLast())
    }

    @Test func healthyDownloadIsOneRequest() async throws {
        try await withFaultOrigin { server in
            server.setFile(path, file)
            try await withHTTPOrigin(server.baseURL) { origin in
                let received = try await origin.bytes(of: "packs/big.tar", expected: file.count)
                #expect(received == file)
            }
            #expect(server.requests(of: path).count == 1)
            #expect(server.requests(of: path).first?.range == nil)
        }
    }

    // Seen once (session 6, a full parallel CI run; 20 isolated reruns passed): this test
    // passed its time limit and never returned. No socket was left open in the process and
    // every thread was idle, so an await was never resumed: AsyncHTTPClient's body stream
    // after the server's early close, or HTTPClient.shutdown() after it. Not reproduced yet;
    // an async backtrace of a hung run would tell which (see the issue notes).
    @Test func truncatedBodyResumesFromItsOffset() async throws {
        try await withFaultOrigin { server in
            server.setFile(path, file)
            server.script(path, [.truncate(after: 123_457)])
            try await withHTTPOrigin(server.baseURL) { origin in
                let received = try await origin.bytes(of: "packs/big.tar", expected: file.count)
                #expect(received == file)
            }
            let requests = server.requests(of: path)
            #expect(requests.count == 2)
            let resumedAt = try #require(Self.offset(requests.last?.range))
            #expect((1...123_457).contains(resumedAt), "resumed at \(resumedAt)")
            #expect(requests.last?.ifRange == FaultOrigin.entityTag)
        }
    }

    @Test func resetMidBodyResumesFromItsOffset() async throws {
        try await withFaultOrigin { server in
            server.setFile(path, file)
            server.script(path, [.reset(after: 300_000), .reset(after: 200_000)])
            try await withHTTPOrigin(server.baseURL) { origin in
                let received = try await origin.bytes(of: "packs/big.tar", expected: file.count)
                #expect(received == file)
            }
            let offsets = server.requests(of: path).map { Self.offset($0.range) }
            #expect(offsets.count == 3)
            #expect(offsets.first == .some(nil))
            let first = try #require(offsets[1]), second = try #require(offsets[2])
            #expect((1...300_000).contains(first) && (first + 1...first + 200_000).contains(second), "\(offsets)")
        }
    }

    @Test func serverIgnoringRangeHasTheDeliveredBytesSkipped() async throws {
        try await withFaultOrigin { server in
            server.setFile(path, file)
            server.script(path, [.truncate(after: 100_000), .serveIgnoringRange])
            try await withHTTPOrigin(server.baseURL) { origin in
                let received = try await origin.bytes(of: "packs/big.tar", expected: file.count)
                #expect(received == file)
            }
            let ranges = server.requests(of: path).map(\.range)
            #expect(ranges.count == 2 && ranges[0] == nil)
            #expect((1...100_000).contains(Self.offset(ranges.last ?? nil) ?? 0), "\(ranges)")
        }
    }

    @Test func serverErrorsAreRetried() async throws {
        try await withFaultOrigin { server in
            server.setFile(path, file)
            server.script(path, [.status(500), .status(503), .truncate(after: 10), .status(502)])
            try await withHTTPOrigin(server.baseURL) { origin in
                let received = try await origin.bytes(of: "packs/big.tar", expected: file.count)
                #expect(received == file)
            }
            #expect(server.requests(of: path).count == 5)
        }
    }

    @Test func manifestOverHTTPWithARetry() async throws {
        try await withFaultOrigin { server in
            let manifest = Array("{\"format\":1}\n".utf8)
            server.setFile("/manifest.json", manifest)
            server.script("/manifest.json", [.status(503)])
            try await withHTTPOrigin(server.baseURL + "/") { origin in
                let data = try await origin.data(at: "manifest.json", limit: .mebibytes(1))
                #expect(Array(data) == manifest)
            }
        }
    }
}
